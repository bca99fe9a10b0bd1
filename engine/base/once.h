/* One-time initialization (the SDK's only `once`): fn runs exactly once per flag, and every
 * caller returns only after it has finished, so what fn wrote is visible to all threads. */
#ifndef KESTREL_BASE_ONCE_H
#define KESTREL_BASE_ONCE_H

#include <pthread.h>

typedef pthread_once_t ks__once_flag;
#define KS__ONCE_INIT PTHREAD_ONCE_INIT

void ks__once(ks__once_flag *flag, void (*fn)(void));

#endif /* KESTREL_BASE_ONCE_H */
