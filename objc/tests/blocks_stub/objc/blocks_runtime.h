/* Stand-in for libobjc2's blocks runtime header, for the syntax-only objc_blocks_syntax test:
 * GNUstep's headers include it when the compiler has blocks (clang -fblocks), but Debian's gcc
 * runtime has no blocks runtime. Only declarations; nothing is linked against it. */
#pragma once
void *_Block_copy(const void *block);
void _Block_release(const void *block);
