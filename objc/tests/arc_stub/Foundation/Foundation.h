/* Minimal stand-in for Apple's Foundation: just what the Kestrel headers and the ARC client
 * test use, with Apple's spellings (no GNUstep macros), for a syntax-only ARC check. */
#pragma once
#include <stddef.h>
#include <stdint.h>
typedef long NSInteger;
typedef unsigned long NSUInteger;
typedef signed char BOOL;
#define YES ((BOOL)1)
#define NO ((BOOL)0)
#define nil ((id)0)
#define NS_ENUM(_type, _name)                                                                      \
    enum _name : _type _name;                                                                      \
    enum _name : _type
#define NS_OPTIONS(_type, _name)                                                                   \
    enum _name : _type _name;                                                                      \
    enum _name : _type
#define NS_ASSUME_NONNULL_BEGIN _Pragma("clang assume_nonnull begin")
#define NS_ASSUME_NONNULL_END _Pragma("clang assume_nonnull end")
#define NS_DESIGNATED_INITIALIZER __attribute__((objc_designated_initializer))
typedef struct _NSZone NSZone;
@protocol NSObject
@end
@protocol NSCopying
- (id)copyWithZone:(nullable NSZone *)zone;
@end
typedef struct {
    unsigned long state;
    id __unsafe_unretained *itemsPtr;
    unsigned long *mutationsPtr;
    unsigned long extra[5];
} NSFastEnumerationState;
@protocol NSFastEnumeration
- (NSUInteger)countByEnumeratingWithState:(NSFastEnumerationState *)state
                                  objects:(id __unsafe_unretained[])buffer
                                    count:(NSUInteger)len;
@end
__attribute__((objc_root_class))
@interface NSObject<NSObject> {
    Class isa;
}
+ (instancetype)alloc;
- (instancetype)init;
+ (instancetype)new;
- (id)copy;
@end
@interface NSString : NSObject <NSCopying>
@end
@interface NSData : NSObject <NSCopying>
@end
@interface NSMutableData : NSData
@end
@interface NSArray<__covariant ObjectType> : NSObject <NSCopying, NSFastEnumeration>
@property(readonly) NSUInteger count;
+ (instancetype)arrayWithObjects:(const ObjectType _Nonnull[_Nonnull])objects count:(NSUInteger)cnt;
@end
@interface NSError : NSObject
@end
@interface NSLock : NSObject
@end
@interface NSConstantString : NSString
@end
