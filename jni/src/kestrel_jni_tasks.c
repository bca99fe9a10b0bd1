/* JNI glue of the vision tasks (kestrel/{face,pose,hand,segment,detect,classify}.h).
 *
 * Results cross to Java as one flat float[] per call (plus a String[] of labels or the mask
 * arrays where a task has them) and are unpacked into immutable objects by the Java classes,
 * which costs one JNI array instead of thousands of small object constructions. Integers (counts,
 * ids, class ids) are stored as floats, exact below 2^24. The layouts, which the Java unpack()
 * methods read in the same order:
 *
 *   faces (Face.unpack):            count; per face: box x y w h, score, id, 6 x (x, y)
 *   face meshes (FaceMesh.unpack):  count; per face: box x y w h, score, id, num_landmarks,
 *                                   pitch yaw roll, pose[16], projection[16], mouth_open,
 *                                   left_eye_blink, right_eye_blink, brow_raise, smile,
 *                                   num_landmarks x (x, y, z)
 *   poses (Pose.unpack):            count, mask_width, mask_height; per pose: id, box x y w h,
 *                                   score, 33 x (x, y, z, visibility, presence),
 *                                   33 x world (x, y, z)          + float[][] masks or null
 *   hands (Hand.unpack):            count; per hand: id, box x y w h, score, handedness,
 *                                   handedness_score, 21 x (x, y, z), 21 x world (x, y, z)
 *   objects (DetectedObject):       count; per object: box x y w h, class_id, score, track_id
 *                                                                  + String[] labels
 *   classes (Category.unpack):      count; per class: class_id, score  + String[] labels
 *   segmentation (Mask.unpack):     Object[] { float[] {width, height, person_fraction},
 *                                   float[] mask, byte[] mask_u8 or null }
 *
 * Each task section below holds only what is its own: the desc fields of nativeCreate, its C
 * types and functions (named in one line each of TASK_DESTROY, TASK_SWAP, TASK_GENERATION and
 * TASK_RUN), and how its result
 * converts to Java (an item_layout that flattens one result item, or, for the pose and segmentation
 * masks, a function). Option reading, image pinning, throwing and array building are shared.
 */
#include <stddef.h>
#include <stdlib.h>

#include "kestrel/classify.h"
#include "kestrel/detect.h"
#include "kestrel/face.h"
#include "kestrel/hand.h"
#include "kestrel/pose.h"
#include "kestrel/segment.h"
#include "kestrel_jni.h"

enum {
    FACE_FLOATS = 4 + 2 + 2 * KS_FACE_KEYPOINT_COUNT,
    MESH_HEADER_FLOATS = 4 + 3 + 3 + 16 + 16 + 5,
    POSE_FLOATS = 6 + 5 * KS_POSE_NUM_LANDMARKS + 3 * KS_POSE_NUM_LANDMARKS,
    HAND_FLOATS = 8 + 6 * KS_HAND_NUM_LANDMARKS,
    OBJECT_FLOATS = 7,
    CLASS_FLOATS = 2,
};

/* A float[] being filled in C before one copy into Java. */
typedef struct packer {
    float *data;
    size_t pos;
    size_t size;
} packer;

static int packer_init(JNIEnv *env, packer *p, size_t size) {
    p->pos = 0;
    p->size = size;
    p->data = malloc((size ? size : 1u) * sizeof(float));
    if (p->data == NULL) {
        ks__jni_throw(env, KS_STATUS_OUT_OF_MEMORY, "result array");
        return 1;
    }
    return 0;
}

static void put(packer *p, float v) {
    if (p->pos < p->size) p->data[p->pos++] = v;
}

static void put_floats(packer *p, const float *v, size_t n) {
    for (size_t i = 0; i < n; i++)
        put(p, v[i]);
}

static void put_box(packer *p, ks_box b) {
    put(p, b.x);
    put(p, b.y);
    put(p, b.w);
    put(p, b.h);
}

static void put_points3(packer *p, const ks_point3f *pts, size_t n) {
    for (size_t i = 0; i < n; i++) {
        put(p, pts[i].x);
        put(p, pts[i].y);
        put(p, pts[i].z);
    }
}

/* Moves the packed floats into a new float[] and frees the C copy. */
static jfloatArray packer_finish(JNIEnv *env, packer *p) {
    jfloatArray out = (*env)->NewFloatArray(env, (jsize)p->pos);
    if (out != NULL) (*env)->SetFloatArrayRegion(env, out, 0, (jsize)p->pos, p->data);
    free(p->data);
    p->data = NULL;
    return out;
}

/* How one task flattens the items of its result array (see the layouts above). */
typedef struct item_layout {
    size_t item_size_bytes; /* stride of the C items array */
    size_t num_floats;      /* floats per item (the fixed part when num_extra_floats is set) */
    size_t (*num_extra_floats)(const void *item); /* variable-length part, or NULL */
    void (*put_item)(packer *p, const void *item);
} item_layout;

/* Only called for i < count, so items is never NULL here (a count of 0 may come with NULL). */
static const void *item_at(const void *items, size_t item_size_bytes, uint32_t i) {
    return (const char *)items + (size_t)i * item_size_bytes;
}

/* The float[] of a result: count, then header[num_header], then every item per the layout.
 * Returns NULL with an exception pending. */
static jfloatArray pack_items(JNIEnv *env, const item_layout *layout, const float *header,
                              size_t num_header, const void *items, uint32_t count) {
    size_t size = 1 + num_header + (size_t)count * layout->num_floats;
    for (uint32_t i = 0; layout->num_extra_floats != NULL && i < count; i++)
        size += layout->num_extra_floats(item_at(items, layout->item_size_bytes, i));
    packer p;
    if (packer_init(env, &p, size)) return NULL;
    put(&p, (float)count);
    put_floats(&p, header, num_header);
    for (uint32_t i = 0; i < count; i++)
        layout->put_item(&p, item_at(items, layout->item_size_bytes, i));
    return packer_finish(env, &p);
}

/* String[] of the `const char *` at label_offset in every item (NULL labels become ""). */
static jobjectArray new_labels(JNIEnv *env, const void *items, uint32_t count,
                               size_t item_size_bytes, size_t label_offset) {
    jobjectArray out = (*env)->NewObjectArray(env, (jsize)count, ks__jni_string_class(), NULL);
    for (uint32_t i = 0; out != NULL && i < count; i++) {
        const char *item = item_at(items, item_size_bytes, i);
        const char *label = *(const char *const *)(item + label_offset);
        jstring s = (*env)->NewStringUTF(env, label ? label : "");
        if (s == NULL) return NULL;
        (*env)->SetObjectArrayElement(env, out, (jsize)i, s);
        (*env)->DeleteLocalRef(env, s);
    }
    return out;
}

/* Object[] {a, b, c} (c may be null). */
static jobjectArray new_pair(JNIEnv *env, jobject a, jobject b, jobject c) {
    jclass object_class = (*env)->FindClass(env, "java/lang/Object");
    if (object_class == NULL) return NULL;
    jobjectArray out = (*env)->NewObjectArray(env, 3, object_class, NULL);
    (*env)->DeleteLocalRef(env, object_class);
    if (out != NULL) {
        (*env)->SetObjectArrayElement(env, out, 0, a);
        (*env)->SetObjectArrayElement(env, out, 1, b);
        (*env)->SetObjectArrayElement(env, out, 2, c);
    }
    return out;
}

/* Object[] {float[] packed items, String[] labels, null} of a labelled result. */
static jobjectArray pack_labelled(JNIEnv *env, const item_layout *layout, const void *items,
                                  uint32_t count, size_t label_offset) {
    jfloatArray data = pack_items(env, layout, NULL, 0, items, count);
    if (data == NULL) return NULL;
    jobjectArray labels = new_labels(env, items, count, layout->item_size_bytes, label_offset);
    if (labels == NULL) return NULL;
    return new_pair(env, data, labels, NULL);
}

/* nativeCreate plumbing: reads the common options into desc.task, calls create_fn(&desc, &h)
 * for a `type *h`, and returns the handle, or 0 with the create's message thrown. */
#define TASK_CREATE(env, ti, tf, jpath, jkey, jprovider, type, create_fn, desc)                    \
    do {                                                                                           \
        ks__jni_task_extras extras_;                                                               \
        if (ks__jni_task_options(env, ti, tf, jpath, jkey, jprovider, &(desc).task, &extras_))     \
            return 0;                                                                              \
        type *handle_ = NULL;                                                                      \
        ks_status st_ = create_fn(&(desc), &handle_);                                              \
        ks__jni_task_options_release(&extras_);                                                    \
        if (st_ != KS_STATUS_OK) {                                                                 \
            ks__jni_throw_last(env, st_, NULL);                                                    \
            return 0;                                                                              \
        }                                                                                          \
        return KS_JNI_HANDLE(handle_);                                                             \
    } while (0)

/* The other two entry points of a task are the same but for names, so they are generated; the
 * prototypes they must match come from `javac -h` (see kestrel_jni.h), which catches a misspelt
 * class or method.
 *
 * TASK_DESTROY defines Java_ai_kestrel_<Class>_nativeDestroy(env, cls, handle), which calls
 * destroy_fn((type *)handle).
 *
 * TASK_RUN defines `jtype Java_ai_kestrel_<Class>_<method>(env, cls, handle, image, timestamp_us)`:
 * pins the Java image, calls run_fn((type *)handle, image, timestamp_us, &result) with a
 * `result_type *result`, unpins, and throws the task's ks_last_error message on failure; else it
 * converts with to_java(env, result) (NULL with an exception pending if that fails), calls
 * release_fn(result) and returns the conversion. */
#define TASK_DESTROY(Class, type, destroy_fn)                                                      \
    JNIEXPORT void JNICALL Java_ai_kestrel_##Class##_nativeDestroy(JNIEnv *env, jclass cls,        \
                                                                   jlong h) {                      \
        destroy_fn(KS_JNI_PTR(type, h));                                                           \
    }

/* TASK_SWAP defines Java_ai_kestrel_<Class>_nativeSwapModel(env, cls, handle, path, key,
 * provider): swap_fn((type *)handle, &source) with the model path and key (copied for the call
 * and wiped, as for create) and the create's message thrown on failure (ks_last_error(NULL) of
 * this thread). It may run while a run call of the same task is in progress on another thread
 * (the Java class does not hold its monitor for it; kestrel/vision.h, "Live swap").
 *
 * TASK_GENERATION defines `jlong Java_ai_kestrel_<Class>_nativeModelGeneration(env, cls,
 * handle)`: ks_task_stats.model_generation from stats_fn. */
#define TASK_SWAP(Class, type, swap_fn)                                                            \
    JNIEXPORT void JNICALL Java_ai_kestrel_##Class##_nativeSwapModel(                              \
        JNIEnv *env, jclass cls, jlong h, jstring jpath, jbyteArray jkey, jobject jprovider) {     \
        ks_task_options source_;                                                                   \
        ks__jni_task_extras extras_;                                                               \
        if (ks__jni_task_source(env, jpath, jkey, jprovider, &source_, &extras_)) return;          \
        ks_status st_ = swap_fn(KS_JNI_PTR(type, h), &source_);                                    \
        ks__jni_task_options_release(&extras_);                                                    \
        if (st_ != KS_STATUS_OK) ks__jni_throw_last(env, st_, NULL);                               \
    }

#define TASK_GENERATION(Class, type, stats_fn)                                                     \
    JNIEXPORT jlong JNICALL Java_ai_kestrel_##Class##_nativeModelGeneration(JNIEnv *env,           \
                                                                            jclass cls, jlong h) { \
        ks_task_stats stats_;                                                                      \
        ks_status st_ = stats_fn(KS_JNI_PTR(type, h), &stats_);                                    \
        if (st_ != KS_STATUS_OK) {                                                                 \
            ks__jni_throw_last(env, st_, KS_JNI_PTR(type, h));                                     \
            return 0;                                                                              \
        }                                                                                          \
        return (jlong)stats_.model_generation;                                                     \
    }

#define TASK_RUN(Class, method, jtype, type, run_fn, result_type, to_java, release_fn)             \
    JNIEXPORT jtype JNICALL Java_ai_kestrel_##Class##_##method(                                    \
        JNIEnv *env, jclass cls, jlong h, jobject jimage, jlong timestamp_us) {                    \
        type *task_ = KS_JNI_PTR(type, h);                                                         \
        result_type *result_ = NULL;                                                               \
        ks__jni_image img_;                                                                        \
        if (ks__jni_image_acquire(env, jimage, &img_)) return NULL;                                \
        ks_status st_ = run_fn(task_, &img_.image, (int64_t)timestamp_us, &result_);               \
        ks__jni_image_release(env, &img_);                                                         \
        if (st_ != KS_STATUS_OK) {                                                                 \
            ks__jni_throw_last(env, st_, task_);                                                   \
            return NULL;                                                                           \
        }                                                                                          \
        jtype out_ = to_java(env, result_);                                                        \
        release_fn(result_);                                                                       \
        return out_;                                                                               \
    }

/* ---- FaceDetector ---------------------------------------------------------------------------- */

static void put_face(packer *p, const void *item) {
    const ks_face *f = item;
    put_box(p, f->box);
    put(p, f->score);
    put(p, (float)f->id);
    for (int k = 0; k < KS_FACE_KEYPOINT_COUNT; k++) {
        put(p, f->keypoints[k].x);
        put(p, f->keypoints[k].y);
    }
}

static const item_layout face_layout = {sizeof(ks_face), FACE_FLOATS, NULL, put_face};

static jfloatArray faces_to_java(JNIEnv *env, const ks_faces *faces) {
    return pack_items(env, &face_layout, NULL, 0, faces->items, faces->count);
}

JNIEXPORT jlong JNICALL Java_ai_kestrel_FaceDetector_nativeCreate(JNIEnv *env, jclass cls,
                                                                  jintArray ti, jfloatArray tf,
                                                                  jstring jpath, jbyteArray jkey,
                                                                  jobject jprovider, jint model) {
    ks_face_detector_desc desc = {.model = (ks_face_detector_model)model};
    TASK_CREATE(env, ti, tf, jpath, jkey, jprovider, ks_face_detector, ks_face_detector_create,
                desc);
}

TASK_DESTROY(FaceDetector, ks_face_detector, ks_face_detector_destroy)
TASK_SWAP(FaceDetector, ks_face_detector, ks_face_detector_swap_model)
TASK_GENERATION(FaceDetector, ks_face_detector, ks_face_detector_stats)
TASK_RUN(FaceDetector, nativeDetect, jfloatArray, ks_face_detector, ks_face_detect, ks_faces,
         faces_to_java, ks_faces_release)

/* ---- FaceLandmarker -------------------------------------------------------------------------- */

static size_t mesh_extra_floats(const void *item) {
    return 3u * ((const ks_face_mesh *)item)->num_landmarks;
}

static void put_mesh(packer *p, const void *item) {
    const ks_face_mesh *f = item;
    put_box(p, f->box);
    put(p, f->score);
    put(p, (float)f->id);
    put(p, (float)f->num_landmarks);
    put(p, f->pitch_deg);
    put(p, f->yaw_deg);
    put(p, f->roll_deg);
    put_floats(p, f->pose_matrix, 16);
    put_floats(p, f->projection_matrix, 16);
    put(p, f->expressions.mouth_open);
    put(p, f->expressions.left_eye_blink);
    put(p, f->expressions.right_eye_blink);
    put(p, f->expressions.brow_raise);
    put(p, f->expressions.smile);
    put_points3(p, f->landmarks, f->num_landmarks);
}

static const item_layout mesh_layout = {sizeof(ks_face_mesh), MESH_HEADER_FLOATS, mesh_extra_floats,
                                        put_mesh};

static jfloatArray meshes_to_java(JNIEnv *env, const ks_face_meshes *faces) {
    return pack_items(env, &mesh_layout, NULL, 0, faces->items, faces->count);
}

JNIEXPORT jlong JNICALL Java_ai_kestrel_FaceLandmarker_nativeCreate(
    JNIEnv *env, jclass cls, jintArray ti, jfloatArray tf, jstring jpath, jbyteArray jkey,
    jobject jprovider, jint detector, jboolean refine, jfloat min_tracking_score) {
    ks_face_landmarker_desc desc = {.detector = (ks_face_detector_model)detector,
                                    .refine_landmarks = refine ? 1 : 0,
                                    .min_tracking_score = min_tracking_score};
    TASK_CREATE(env, ti, tf, jpath, jkey, jprovider, ks_face_landmarker, ks_face_landmarker_create,
                desc);
}

TASK_DESTROY(FaceLandmarker, ks_face_landmarker, ks_face_landmarker_destroy)
TASK_SWAP(FaceLandmarker, ks_face_landmarker, ks_face_landmarker_swap_model)
TASK_GENERATION(FaceLandmarker, ks_face_landmarker, ks_face_landmarker_stats)
TASK_RUN(FaceLandmarker, nativeDetect, jfloatArray, ks_face_landmarker, ks_face_landmarker_detect,
         ks_face_meshes, meshes_to_java, ks_face_meshes_release)

/* ---- PoseLandmarker -------------------------------------------------------------------------- */

static void put_pose(packer *p, const void *item) {
    const ks_pose *q = item;
    put(p, (float)q->id);
    put_box(p, q->box);
    put(p, q->score);
    for (int k = 0; k < KS_POSE_NUM_LANDMARKS; k++) {
        put(p, q->landmarks[k].x);
        put(p, q->landmarks[k].y);
        put(p, q->landmarks[k].z);
        put(p, q->landmarks[k].visibility);
        put(p, q->landmarks[k].presence);
    }
    put_points3(p, q->world_landmarks, KS_POSE_NUM_LANDMARKS);
}

static const item_layout pose_layout = {sizeof(ks_pose), POSE_FLOATS, NULL, put_pose};

/* float[count][mask w * h], null where a pose has no mask; *out stays NULL when none has one.
 * Returns nonzero with an exception pending. */
static int pose_masks(JNIEnv *env, const ks_poses *poses, jobjectArray *out) {
    int any_mask = 0;
    *out = NULL;
    for (uint32_t i = 0; i < poses->count; i++)
        any_mask |= poses->items[i].mask != NULL;
    if (!any_mask) return 0;
    size_t n = (size_t)poses->mask_width_px * (size_t)poses->mask_height_px;
    jobjectArray masks =
        (*env)->NewObjectArray(env, (jsize)poses->count, ks__jni_float_array_class(), NULL);
    if (masks == NULL) return 1;
    for (uint32_t i = 0; i < poses->count; i++) {
        if (poses->items[i].mask == NULL) continue;
        jfloatArray m = (*env)->NewFloatArray(env, (jsize)n);
        if (m == NULL) return 1;
        (*env)->SetFloatArrayRegion(env, m, 0, (jsize)n, poses->items[i].mask);
        (*env)->SetObjectArrayElement(env, masks, (jsize)i, m);
        (*env)->DeleteLocalRef(env, m);
    }
    *out = masks;
    return 0;
}

static jobjectArray poses_to_java(JNIEnv *env, const ks_poses *poses) {
    float mask_size[2] = {(float)poses->mask_width_px, (float)poses->mask_height_px};
    jfloatArray data = pack_items(env, &pose_layout, mask_size, 2, poses->items, poses->count);
    jobjectArray masks = NULL;
    if (data == NULL || pose_masks(env, poses, &masks)) return NULL;
    return new_pair(env, data, masks, NULL);
}

JNIEXPORT jlong JNICALL Java_ai_kestrel_PoseLandmarker_nativeCreate(
    JNIEnv *env, jclass cls, jintArray ti, jfloatArray tf, jstring jpath, jbyteArray jkey,
    jobject jprovider, jint model, jfloat min_presence, jboolean output_segmentation) {
    ks_pose_landmarker_desc desc = {.model = (ks_pose_model)model,
                                    .min_presence = min_presence,
                                    .output_segmentation = output_segmentation ? 1 : 0};
    TASK_CREATE(env, ti, tf, jpath, jkey, jprovider, ks_pose_landmarker, ks_pose_landmarker_create,
                desc);
}

TASK_DESTROY(PoseLandmarker, ks_pose_landmarker, ks_pose_landmarker_destroy)
TASK_SWAP(PoseLandmarker, ks_pose_landmarker, ks_pose_landmarker_swap_model)
TASK_GENERATION(PoseLandmarker, ks_pose_landmarker, ks_pose_landmarker_stats)
TASK_RUN(PoseLandmarker, nativeDetect, jobjectArray, ks_pose_landmarker, ks_pose_detect, ks_poses,
         poses_to_java, ks_poses_release)

/* ---- Segmenter ------------------------------------------------------------------------------- */

static jobjectArray segmentation_to_java(JNIEnv *env, const ks_segmentation *m) {
    jsize n = (jsize)((size_t)m->width_px * (size_t)m->height_px);
    float header[3] = {(float)m->width_px, (float)m->height_px, m->person_fraction};
    jfloatArray jheader = (*env)->NewFloatArray(env, 3);
    jfloatArray jmask = jheader ? (*env)->NewFloatArray(env, n) : NULL;
    if (jmask == NULL) return NULL;
    (*env)->SetFloatArrayRegion(env, jheader, 0, 3, header);
    (*env)->SetFloatArrayRegion(env, jmask, 0, n, m->mask);
    jbyteArray ju8 = NULL;
    if (m->mask_u8 != NULL) {
        ju8 = (*env)->NewByteArray(env, n);
        if (ju8 == NULL) return NULL;
        (*env)->SetByteArrayRegion(env, ju8, 0, n, (const jbyte *)m->mask_u8);
    }
    return new_pair(env, jheader, jmask, ju8);
}

JNIEXPORT jlong JNICALL Java_ai_kestrel_Segmenter_nativeCreate(JNIEnv *env, jclass cls,
                                                               jintArray ti, jfloatArray tf,
                                                               jstring jpath, jbyteArray jkey,
                                                               jobject jprovider, jint model,
                                                               jboolean output_u8) {
    ks_segmenter_desc desc = {.model = (ks_segmenter_model)model, .output_u8 = output_u8 ? 1 : 0};
    TASK_CREATE(env, ti, tf, jpath, jkey, jprovider, ks_segmenter, ks_segmenter_create, desc);
}

TASK_DESTROY(Segmenter, ks_segmenter, ks_segmenter_destroy)
TASK_SWAP(Segmenter, ks_segmenter, ks_segmenter_swap_model)
TASK_GENERATION(Segmenter, ks_segmenter, ks_segmenter_stats)
TASK_RUN(Segmenter, nativeSegment, jobjectArray, ks_segmenter, ks_segment, ks_segmentation,
         segmentation_to_java, ks_segmentation_release)

/* ---- ObjectDetector -------------------------------------------------------------------------- */

static void put_object(packer *p, const void *item) {
    const ks_detected_object *o = item;
    put_box(p, o->box);
    put(p, (float)o->class_id);
    put(p, o->score);
    put(p, (float)o->track_id);
}

static const item_layout object_layout = {sizeof(ks_detected_object), OBJECT_FLOATS, NULL,
                                          put_object};

static jobjectArray objects_to_java(JNIEnv *env, const ks_detected_objects *objs) {
    return pack_labelled(env, &object_layout, objs->items, objs->count,
                         offsetof(ks_detected_object, label));
}

JNIEXPORT jlong JNICALL Java_ai_kestrel_ObjectDetector_nativeCreate(JNIEnv *env, jclass cls,
                                                                    jintArray ti, jfloatArray tf,
                                                                    jstring jpath, jbyteArray jkey,
                                                                    jobject jprovider) {
    ks_object_detector_desc desc = {0};
    TASK_CREATE(env, ti, tf, jpath, jkey, jprovider, ks_object_detector, ks_object_detector_create,
                desc);
}

TASK_DESTROY(ObjectDetector, ks_object_detector, ks_object_detector_destroy)
TASK_SWAP(ObjectDetector, ks_object_detector, ks_object_detector_swap_model)
TASK_GENERATION(ObjectDetector, ks_object_detector, ks_object_detector_stats)
TASK_RUN(ObjectDetector, nativeDetect, jobjectArray, ks_object_detector, ks_object_detect,
         ks_detected_objects, objects_to_java, ks_detected_objects_release)

/* ---- HandLandmarker -------------------------------------------------------------------------- */

static void put_hand(packer *p, const void *item) {
    const ks_hand *q = item;
    put(p, (float)q->id);
    put_box(p, q->box);
    put(p, q->score);
    put(p, (float)q->handedness);
    put(p, q->handedness_score);
    put_points3(p, q->landmarks, KS_HAND_NUM_LANDMARKS);
    put_points3(p, q->world_landmarks, KS_HAND_NUM_LANDMARKS);
}

static const item_layout hand_layout = {sizeof(ks_hand), HAND_FLOATS, NULL, put_hand};

static jfloatArray hands_to_java(JNIEnv *env, const ks_hands *hands) {
    return pack_items(env, &hand_layout, NULL, 0, hands->items, hands->count);
}

JNIEXPORT jlong JNICALL Java_ai_kestrel_HandLandmarker_nativeCreate(JNIEnv *env, jclass cls,
                                                                    jintArray ti, jfloatArray tf,
                                                                    jstring jpath, jbyteArray jkey,
                                                                    jobject jprovider, jint model,
                                                                    jfloat min_presence) {
    ks_hand_landmarker_desc desc = {.model = (ks_hand_model)model, .min_presence = min_presence};
    TASK_CREATE(env, ti, tf, jpath, jkey, jprovider, ks_hand_landmarker, ks_hand_landmarker_create,
                desc);
}

TASK_DESTROY(HandLandmarker, ks_hand_landmarker, ks_hand_landmarker_destroy)
TASK_SWAP(HandLandmarker, ks_hand_landmarker, ks_hand_landmarker_swap_model)
TASK_GENERATION(HandLandmarker, ks_hand_landmarker, ks_hand_landmarker_stats)
TASK_RUN(HandLandmarker, nativeDetect, jfloatArray, ks_hand_landmarker, ks_hands_detect, ks_hands,
         hands_to_java, ks_hands_release)

/* ---- ImageClassifier ------------------------------------------------------------------------- */

static void put_class(packer *p, const void *item) {
    const ks_class_score *c = item;
    put(p, (float)c->class_id);
    put(p, c->score);
}

static const item_layout class_layout = {sizeof(ks_class_score), CLASS_FLOATS, NULL, put_class};

static jobjectArray classes_to_java(JNIEnv *env, const ks_classifications *top) {
    return pack_labelled(env, &class_layout, top->items, top->count,
                         offsetof(ks_class_score, label));
}

JNIEXPORT jlong JNICALL Java_ai_kestrel_ImageClassifier_nativeCreate(JNIEnv *env, jclass cls,
                                                                     jintArray ti, jfloatArray tf,
                                                                     jstring jpath, jbyteArray jkey,
                                                                     jobject jprovider) {
    ks_image_classifier_desc desc = {0};
    TASK_CREATE(env, ti, tf, jpath, jkey, jprovider, ks_image_classifier,
                ks_image_classifier_create, desc);
}

TASK_DESTROY(ImageClassifier, ks_image_classifier, ks_image_classifier_destroy)
TASK_SWAP(ImageClassifier, ks_image_classifier, ks_image_classifier_swap_model)
TASK_GENERATION(ImageClassifier, ks_image_classifier, ks_image_classifier_stats)
TASK_RUN(ImageClassifier, nativeClassify, jobjectArray, ks_image_classifier, ks_image_classify,
         ks_classifications, classes_to_java, ks_classifications_release)
