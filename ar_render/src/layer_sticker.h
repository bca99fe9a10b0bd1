/* The sticker layer's CPU state (layer_sticker.c), which its GL half (gles3/sticker.c) draws
 * from. Internal. */
#ifndef KESTREL_AR_LAYER_STICKER_H
#define KESTREL_AR_LAYER_STICKER_H

#include "ar_internal.h"

typedef struct ks__ar_sticker {
    float aspect;                       /* sprite height / width */
    float corners[KS__AR_MAX_SLOTS][8]; /* per slot, this frame: TL, TR, BL, BR in pixels */
} ks__ar_sticker;

#endif /* KESTREL_AR_LAYER_STICKER_H */
