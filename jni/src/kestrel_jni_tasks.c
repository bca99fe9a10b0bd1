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
 */
#include <stdlib.h>
#include <string.h>

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

static jobjectArray new_labels(JNIEnv *env, uint32_t count, const char *const *labels,
                               size_t stride_bytes) {
    jobjectArray out = (*env)->NewObjectArray(env, (jsize)count, ks__jni_string_class(), NULL);
    for (uint32_t i = 0; out != NULL && i < count; i++) {
        const char *label = *(const char *const *)((const char *)labels + i * stride_bytes);
        jstring s = (*env)->NewStringUTF(env, label ? label : "");
        if (s == NULL) return NULL;
        (*env)->SetObjectArrayElement(env, out, (jsize)i, s);
        (*env)->DeleteLocalRef(env, s);
    }
    return out;
}

static jobjectArray new_pair(JNIEnv *env, jobject a, jobject b, jobject c) {
    jclass object_class = (*env)->FindClass(env, "java/lang/Object");
    if (object_class == NULL) return NULL;
    jobjectArray out = (*env)->NewObjectArray(env, 3, object_class, NULL);
    if (out != NULL) {
        (*env)->SetObjectArrayElement(env, out, 0, a);
        (*env)->SetObjectArrayElement(env, out, 1, b);
        (*env)->SetObjectArrayElement(env, out, 2, c);
    }
    return out;
}

/* Shared create plumbing: reads the common options into desc->task, calls create, throws. */
#define TASK_CREATE(env, ti, tf, jpath, desc, create_call)                                         \
    do {                                                                                           \
        const char *path_ = NULL;                                                                  \
        if (ks__jni_task_options(env, ti, tf, jpath, &(desc).task, &path_)) return 0;              \
        ks_status st_ = (create_call);                                                             \
        ks__jni_task_options_release(env, jpath, path_);                                           \
        if (st_ != KS_STATUS_OK) {                                                                 \
            ks__jni_throw_last(env, st_, NULL);                                                    \
            return 0;                                                                              \
        }                                                                                          \
    } while (0)

/* Shared run plumbing: pins the image, runs, releases, throws with the task's message. */
#define TASK_RUN(env, jimage, handle, run_call)                                                    \
    do {                                                                                           \
        ks__jni_image img_;                                                                        \
        if (ks__jni_image_acquire(env, jimage, &img_)) return NULL;                                \
        const ks_image *image = &img_.image;                                                       \
        ks_status st_ = (run_call);                                                                \
        ks__jni_image_release(env, &img_);                                                         \
        if (st_ != KS_STATUS_OK) {                                                                 \
            ks__jni_throw_last(env, st_, handle);                                                  \
            return NULL;                                                                           \
        }                                                                                          \
    } while (0)

/* ---- FaceDetector ---------------------------------------------------------------------------- */

JNIEXPORT jlong JNICALL Java_ai_kestrel_FaceDetector_nativeCreate(JNIEnv *env, jclass cls,
                                                                  jintArray ti, jfloatArray tf,
                                                                  jstring jpath, jint model) {
    ks_face_detector_desc desc = {.model = (ks_face_detector_model)model};
    ks_face_detector *det = NULL;
    TASK_CREATE(env, ti, tf, jpath, desc, ks_face_detector_create(&desc, &det));
    return KS_JNI_HANDLE(det);
}

JNIEXPORT void JNICALL Java_ai_kestrel_FaceDetector_nativeDestroy(JNIEnv *env, jclass cls,
                                                                  jlong h) {
    ks_face_detector_destroy(KS_JNI_PTR(ks_face_detector, h));
}

JNIEXPORT jfloatArray JNICALL Java_ai_kestrel_FaceDetector_nativeDetect(JNIEnv *env, jclass cls,
                                                                        jlong h, jobject jimage,
                                                                        jlong timestamp_us) {
    ks_face_detector *det = KS_JNI_PTR(ks_face_detector, h);
    ks_faces *faces = NULL;
    packer p;
    TASK_RUN(env, jimage, det, ks_face_detect(det, image, (int64_t)timestamp_us, &faces));
    if (packer_init(env, &p, 1 + (size_t)faces->count * FACE_FLOATS)) {
        ks_faces_release(faces);
        return NULL;
    }
    put(&p, (float)faces->count);
    for (uint32_t i = 0; i < faces->count; i++) {
        const ks_face *f = &faces->items[i];
        put_box(&p, f->box);
        put(&p, f->score);
        put(&p, (float)f->id);
        for (int k = 0; k < KS_FACE_KEYPOINT_COUNT; k++) {
            put(&p, f->keypoints[k].x);
            put(&p, f->keypoints[k].y);
        }
    }
    ks_faces_release(faces);
    return packer_finish(env, &p);
}

/* ---- FaceLandmarker -------------------------------------------------------------------------- */

JNIEXPORT jlong JNICALL Java_ai_kestrel_FaceLandmarker_nativeCreate(JNIEnv *env, jclass cls,
                                                                    jintArray ti, jfloatArray tf,
                                                                    jstring jpath, jint detector,
                                                                    jboolean refine,
                                                                    jfloat min_tracking_score) {
    ks_face_landmarker_desc desc = {.detector = (ks_face_detector_model)detector,
                                    .refine_landmarks = refine ? 1 : 0,
                                    .min_tracking_score = min_tracking_score};
    ks_face_landmarker *lm = NULL;
    TASK_CREATE(env, ti, tf, jpath, desc, ks_face_landmarker_create(&desc, &lm));
    return KS_JNI_HANDLE(lm);
}

JNIEXPORT void JNICALL Java_ai_kestrel_FaceLandmarker_nativeDestroy(JNIEnv *env, jclass cls,
                                                                    jlong h) {
    ks_face_landmarker_destroy(KS_JNI_PTR(ks_face_landmarker, h));
}

JNIEXPORT jfloatArray JNICALL Java_ai_kestrel_FaceLandmarker_nativeDetect(JNIEnv *env, jclass cls,
                                                                          jlong h, jobject jimage,
                                                                          jlong timestamp_us) {
    ks_face_landmarker *lm = KS_JNI_PTR(ks_face_landmarker, h);
    ks_face_meshes *faces = NULL;
    packer p;
    TASK_RUN(env, jimage, lm, ks_face_landmarker_detect(lm, image, (int64_t)timestamp_us, &faces));
    size_t size = 1;
    for (uint32_t i = 0; i < faces->count; i++)
        size += MESH_HEADER_FLOATS + 3u * faces->items[i].num_landmarks;
    if (packer_init(env, &p, size)) {
        ks_face_meshes_release(faces);
        return NULL;
    }
    put(&p, (float)faces->count);
    for (uint32_t i = 0; i < faces->count; i++) {
        const ks_face_mesh *f = &faces->items[i];
        put_box(&p, f->box);
        put(&p, f->score);
        put(&p, (float)f->id);
        put(&p, (float)f->num_landmarks);
        put(&p, f->pitch_deg);
        put(&p, f->yaw_deg);
        put(&p, f->roll_deg);
        for (int k = 0; k < 16; k++)
            put(&p, f->pose_matrix[k]);
        for (int k = 0; k < 16; k++)
            put(&p, f->projection_matrix[k]);
        put(&p, f->expressions.mouth_open);
        put(&p, f->expressions.left_eye_blink);
        put(&p, f->expressions.right_eye_blink);
        put(&p, f->expressions.brow_raise);
        put(&p, f->expressions.smile);
        put_points3(&p, f->landmarks, f->num_landmarks);
    }
    ks_face_meshes_release(faces);
    return packer_finish(env, &p);
}

/* ---- PoseLandmarker -------------------------------------------------------------------------- */

JNIEXPORT jlong JNICALL Java_ai_kestrel_PoseLandmarker_nativeCreate(JNIEnv *env, jclass cls,
                                                                    jintArray ti, jfloatArray tf,
                                                                    jstring jpath, jint model,
                                                                    jfloat min_presence,
                                                                    jboolean output_segmentation) {
    ks_pose_landmarker_desc desc = {.model = (ks_pose_model)model,
                                    .min_presence = min_presence,
                                    .output_segmentation = output_segmentation ? 1 : 0};
    ks_pose_landmarker *pl = NULL;
    TASK_CREATE(env, ti, tf, jpath, desc, ks_pose_landmarker_create(&desc, &pl));
    return KS_JNI_HANDLE(pl);
}

JNIEXPORT void JNICALL Java_ai_kestrel_PoseLandmarker_nativeDestroy(JNIEnv *env, jclass cls,
                                                                    jlong h) {
    ks_pose_landmarker_destroy(KS_JNI_PTR(ks_pose_landmarker, h));
}

static jobjectArray pose_masks(JNIEnv *env, const ks_poses *poses) {
    size_t n = (size_t)poses->mask_width_px * (size_t)poses->mask_height_px;
    jobjectArray out =
        (*env)->NewObjectArray(env, (jsize)poses->count, ks__jni_float_array_class(), NULL);
    for (uint32_t i = 0; out != NULL && i < poses->count; i++) {
        if (poses->items[i].mask == NULL) continue;
        jfloatArray m = (*env)->NewFloatArray(env, (jsize)n);
        if (m == NULL) return NULL;
        (*env)->SetFloatArrayRegion(env, m, 0, (jsize)n, poses->items[i].mask);
        (*env)->SetObjectArrayElement(env, out, (jsize)i, m);
        (*env)->DeleteLocalRef(env, m);
    }
    return out;
}

JNIEXPORT jobjectArray JNICALL Java_ai_kestrel_PoseLandmarker_nativeDetect(JNIEnv *env, jclass cls,
                                                                           jlong h, jobject jimage,
                                                                           jlong timestamp_us) {
    ks_pose_landmarker *pl = KS_JNI_PTR(ks_pose_landmarker, h);
    ks_poses *poses = NULL;
    packer p;
    int any_mask = 0;
    TASK_RUN(env, jimage, pl, ks_pose_detect(pl, image, (int64_t)timestamp_us, &poses));
    if (packer_init(env, &p, 3 + (size_t)poses->count * POSE_FLOATS)) {
        ks_poses_release(poses);
        return NULL;
    }
    put(&p, (float)poses->count);
    put(&p, (float)poses->mask_width_px);
    put(&p, (float)poses->mask_height_px);
    for (uint32_t i = 0; i < poses->count; i++) {
        const ks_pose *q = &poses->items[i];
        put(&p, (float)q->id);
        put_box(&p, q->box);
        put(&p, q->score);
        for (int k = 0; k < KS_POSE_NUM_LANDMARKS; k++) {
            put(&p, q->landmarks[k].x);
            put(&p, q->landmarks[k].y);
            put(&p, q->landmarks[k].z);
            put(&p, q->landmarks[k].visibility);
            put(&p, q->landmarks[k].presence);
        }
        put_points3(&p, q->world_landmarks, KS_POSE_NUM_LANDMARKS);
        any_mask |= q->mask != NULL;
    }
    jobjectArray masks = any_mask ? pose_masks(env, poses) : NULL;
    ks_poses_release(poses);
    jfloatArray data = packer_finish(env, &p);
    if (data == NULL || (any_mask && masks == NULL)) return NULL;
    return new_pair(env, data, masks, NULL);
}

/* ---- Segmenter ------------------------------------------------------------------------------- */

JNIEXPORT jlong JNICALL Java_ai_kestrel_Segmenter_nativeCreate(JNIEnv *env, jclass cls,
                                                               jintArray ti, jfloatArray tf,
                                                               jstring jpath, jint model,
                                                               jboolean output_u8) {
    ks_segmenter_desc desc = {.model = (ks_segmenter_model)model, .output_u8 = output_u8 ? 1 : 0};
    ks_segmenter *seg = NULL;
    TASK_CREATE(env, ti, tf, jpath, desc, ks_segmenter_create(&desc, &seg));
    return KS_JNI_HANDLE(seg);
}

JNIEXPORT void JNICALL Java_ai_kestrel_Segmenter_nativeDestroy(JNIEnv *env, jclass cls, jlong h) {
    ks_segmenter_destroy(KS_JNI_PTR(ks_segmenter, h));
}

JNIEXPORT jobjectArray JNICALL Java_ai_kestrel_Segmenter_nativeSegment(JNIEnv *env, jclass cls,
                                                                       jlong h, jobject jimage,
                                                                       jlong timestamp_us) {
    ks_segmenter *seg = KS_JNI_PTR(ks_segmenter, h);
    ks_segmentation *m = NULL;
    TASK_RUN(env, jimage, seg, ks_segment(seg, image, (int64_t)timestamp_us, &m));
    jsize n = (jsize)((size_t)m->width_px * (size_t)m->height_px);
    float header[3] = {(float)m->width_px, (float)m->height_px, m->person_fraction};
    jfloatArray jheader = (*env)->NewFloatArray(env, 3);
    jfloatArray jmask = jheader ? (*env)->NewFloatArray(env, n) : NULL;
    jbyteArray ju8 = NULL;
    if (jmask != NULL) {
        (*env)->SetFloatArrayRegion(env, jheader, 0, 3, header);
        (*env)->SetFloatArrayRegion(env, jmask, 0, n, m->mask);
        if (m->mask_u8 != NULL) {
            ju8 = (*env)->NewByteArray(env, n);
            if (ju8 != NULL) (*env)->SetByteArrayRegion(env, ju8, 0, n, (const jbyte *)m->mask_u8);
        }
    }
    int failed = jmask == NULL || (m->mask_u8 != NULL && ju8 == NULL);
    ks_segmentation_release(m);
    return failed ? NULL : new_pair(env, jheader, jmask, ju8);
}

/* ---- ObjectDetector -------------------------------------------------------------------------- */

JNIEXPORT jlong JNICALL Java_ai_kestrel_ObjectDetector_nativeCreate(JNIEnv *env, jclass cls,
                                                                    jintArray ti, jfloatArray tf,
                                                                    jstring jpath) {
    ks_object_detector_desc desc = {0};
    ks_object_detector *det = NULL;
    TASK_CREATE(env, ti, tf, jpath, desc, ks_object_detector_create(&desc, &det));
    return KS_JNI_HANDLE(det);
}

JNIEXPORT void JNICALL Java_ai_kestrel_ObjectDetector_nativeDestroy(JNIEnv *env, jclass cls,
                                                                    jlong h) {
    ks_object_detector_destroy(KS_JNI_PTR(ks_object_detector, h));
}

JNIEXPORT jobjectArray JNICALL Java_ai_kestrel_ObjectDetector_nativeDetect(JNIEnv *env, jclass cls,
                                                                           jlong h, jobject jimage,
                                                                           jlong timestamp_us) {
    ks_object_detector *det = KS_JNI_PTR(ks_object_detector, h);
    ks_detected_objects *objs = NULL;
    packer p;
    TASK_RUN(env, jimage, det, ks_object_detect(det, image, (int64_t)timestamp_us, &objs));
    if (packer_init(env, &p, 1 + (size_t)objs->count * OBJECT_FLOATS)) {
        ks_detected_objects_release(objs);
        return NULL;
    }
    put(&p, (float)objs->count);
    for (uint32_t i = 0; i < objs->count; i++) {
        const ks_detected_object *o = &objs->items[i];
        put_box(&p, o->box);
        put(&p, (float)o->class_id);
        put(&p, o->score);
        put(&p, (float)o->track_id);
    }
    jobjectArray labels = new_labels(env, objs->count, objs->count ? &objs->items[0].label : NULL,
                                     sizeof(ks_detected_object));
    ks_detected_objects_release(objs);
    jfloatArray data = packer_finish(env, &p);
    if (data == NULL || labels == NULL) return NULL;
    return new_pair(env, data, labels, NULL);
}

/* ---- HandLandmarker -------------------------------------------------------------------------- */

JNIEXPORT jlong JNICALL Java_ai_kestrel_HandLandmarker_nativeCreate(JNIEnv *env, jclass cls,
                                                                    jintArray ti, jfloatArray tf,
                                                                    jstring jpath, jint model,
                                                                    jfloat min_presence) {
    ks_hand_landmarker_desc desc = {.model = (ks_hand_model)model, .min_presence = min_presence};
    ks_hand_landmarker *hl = NULL;
    TASK_CREATE(env, ti, tf, jpath, desc, ks_hand_landmarker_create(&desc, &hl));
    return KS_JNI_HANDLE(hl);
}

JNIEXPORT void JNICALL Java_ai_kestrel_HandLandmarker_nativeDestroy(JNIEnv *env, jclass cls,
                                                                    jlong h) {
    ks_hand_landmarker_destroy(KS_JNI_PTR(ks_hand_landmarker, h));
}

JNIEXPORT jfloatArray JNICALL Java_ai_kestrel_HandLandmarker_nativeDetect(JNIEnv *env, jclass cls,
                                                                          jlong h, jobject jimage,
                                                                          jlong timestamp_us) {
    ks_hand_landmarker *hl = KS_JNI_PTR(ks_hand_landmarker, h);
    ks_hands *hands = NULL;
    packer p;
    TASK_RUN(env, jimage, hl, ks_hands_detect(hl, image, (int64_t)timestamp_us, &hands));
    if (packer_init(env, &p, 1 + (size_t)hands->count * HAND_FLOATS)) {
        ks_hands_release(hands);
        return NULL;
    }
    put(&p, (float)hands->count);
    for (uint32_t i = 0; i < hands->count; i++) {
        const ks_hand *q = &hands->items[i];
        put(&p, (float)q->id);
        put_box(&p, q->box);
        put(&p, q->score);
        put(&p, (float)q->handedness);
        put(&p, q->handedness_score);
        put_points3(&p, q->landmarks, KS_HAND_NUM_LANDMARKS);
        put_points3(&p, q->world_landmarks, KS_HAND_NUM_LANDMARKS);
    }
    ks_hands_release(hands);
    return packer_finish(env, &p);
}

/* ---- ImageClassifier ------------------------------------------------------------------------- */

JNIEXPORT jlong JNICALL Java_ai_kestrel_ImageClassifier_nativeCreate(JNIEnv *env, jclass cls,
                                                                     jintArray ti, jfloatArray tf,
                                                                     jstring jpath) {
    ks_image_classifier_desc desc = {0};
    ks_image_classifier *c = NULL;
    TASK_CREATE(env, ti, tf, jpath, desc, ks_image_classifier_create(&desc, &c));
    return KS_JNI_HANDLE(c);
}

JNIEXPORT void JNICALL Java_ai_kestrel_ImageClassifier_nativeDestroy(JNIEnv *env, jclass cls,
                                                                     jlong h) {
    ks_image_classifier_destroy(KS_JNI_PTR(ks_image_classifier, h));
}

JNIEXPORT jobjectArray JNICALL Java_ai_kestrel_ImageClassifier_nativeClassify(JNIEnv *env,
                                                                              jclass cls, jlong h,
                                                                              jobject jimage,
                                                                              jlong timestamp_us) {
    ks_image_classifier *c = KS_JNI_PTR(ks_image_classifier, h);
    ks_classifications *top = NULL;
    packer p;
    TASK_RUN(env, jimage, c, ks_image_classify(c, image, (int64_t)timestamp_us, &top));
    if (packer_init(env, &p, 1 + (size_t)top->count * CLASS_FLOATS)) {
        ks_classifications_release(top);
        return NULL;
    }
    put(&p, (float)top->count);
    for (uint32_t i = 0; i < top->count; i++) {
        put(&p, (float)top->items[i].class_id);
        put(&p, top->items[i].score);
    }
    jobjectArray labels = new_labels(env, top->count, top->count ? &top->items[0].label : NULL,
                                     sizeof(ks_class_score));
    ks_classifications_release(top);
    jfloatArray data = packer_finish(env, &p);
    if (data == NULL || labels == NULL) return NULL;
    return new_pair(env, data, labels, NULL);
}
