/* ks__once: pthread_once, available on every target (Linux, Android, Apple, emscripten). */
#include "once.h"

void ks__once(ks__once_flag *flag, void (*fn)(void)) {
    /* POSIX gives pthread_once no failure for a flag initialized with PTHREAD_ONCE_INIT, the
     * only kind KS__ONCE_INIT makes; there is nothing to report. */
    (void)pthread_once(flag, fn);
}
