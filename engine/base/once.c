/* ks__once: pthread_once, available on every target (Linux, Android, Apple, emscripten). */
#include "once.h"

#include <stdlib.h>

void ks__once(ks__once_flag *flag, void (*fn)(void)) {
    /* pthread_once fails only for an invalid flag; nothing sensible can follow that. */
    if (pthread_once(flag, fn) != 0) abort();
}
