/* Shadows the system's <GLES3/gl3.h> in KS_AR_GLES=OFF builds of the AR renderer core and its null
 * backend tests (ar_render/CMakeLists.txt), so that a GL include there fails even on a machine
 * that has the real headers. */
#error "GLES3/gl3.h in the portable AR core: GL code belongs in ar_render/src/gles3/ (KS_AR_GLES)"
