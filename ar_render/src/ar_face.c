/* ks_ar_face_from_mesh: the face landmarker's result as renderer input. Reads the struct layout
 * of kestrel/face.h only (no link dependency on the task library). */
#include <string.h>

#include "ar_internal.h"
#include "kestrel/face.h"

ks_status ks_ar_face_from_mesh(const struct ks_face_mesh *mesh, ks_ar_face *out) {
    if (!mesh || !out || !mesh->landmarks ||
        (mesh->num_landmarks != KS_FACE_MESH_NUM_LANDMARKS &&
         mesh->num_landmarks != KS_FACE_MESH_NUM_LANDMARKS_WITH_IRIS)) {
        ks__object_error(NULL,
                         "ks_ar_face_from_mesh: NULL argument or %u landmarks (expected "
                         "468 or 478)",
                         mesh ? mesh->num_landmarks : 0u);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    memset(out, 0, sizeof(*out));
    out->id = mesh->id;
    out->num_landmarks = mesh->num_landmarks;
    /* ks_point3f is three packed floats: the landmark array is an xyz float array */
    _Static_assert(sizeof(ks_point3f) == 3 * sizeof(float), "ks_point3f must be 3 floats");
    out->landmarks_xyz = &mesh->landmarks[0].x;
    out->has_pose = 1;
    memcpy(out->pose_matrix, mesh->pose_matrix, sizeof(out->pose_matrix));
    memcpy(out->projection_matrix, mesh->projection_matrix, sizeof(out->projection_matrix));
    out->expressions.mouth_open = mesh->expressions.mouth_open;
    out->expressions.left_eye_blink = mesh->expressions.left_eye_blink;
    out->expressions.right_eye_blink = mesh->expressions.right_eye_blink;
    out->expressions.brow_raise = mesh->expressions.brow_raise;
    out->expressions.smile = mesh->expressions.smile;
    return KS_STATUS_OK;
}
