/* Kestrel Objective-C API: the umbrella header (#import <KestrelObjC/KestrelObjC.h>; the module
 * map of the iOS framework uses it, see docs/ios.md). */
#ifndef KESTREL_OBJC_H
#define KESTREL_OBJC_H

#import "KSBase.h"
#import "KSEffectRenderer.h"
#import "KSFace.h"
#import "KSHand.h"
#import "KSObjectDetector.h"
#import "KSPose.h"
#import "KSSegmenter.h"
#import "KSSession.h"
#import "KSStore.h"

#endif /* KESTREL_OBJC_H */
