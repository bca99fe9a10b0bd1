/* Included last by the Vulkan backend's sources: in the module build (KS_VK_MODULE, the shared
 * library's libkestrel_vulkan.so) every core function named in vk_host.h is called through the
 * table the runtime handed the module (vk_module.c); otherwise nothing. The list is
 * KS__VK_HOST_FUNCS's: a name missing here links against nothing in the module and fails its
 * link (-Wl,--no-undefined), a name missing there does not compile. */
#ifndef KESTREL_VULKAN_VK_HOST_REDIRECT_H
#define KESTREL_VULKAN_VK_HOST_REDIRECT_H
#if defined(KS_VK_MODULE)
#include "vk_host.h"

extern const ks__vk_host *ks__vk_host_fns;

#define ks__alloc (ks__vk_host_fns->ks__alloc)
#define ks__allocator_or_default (ks__vk_host_fns->ks__allocator_or_default)
#define ks__calloc (ks__vk_host_fns->ks__calloc)
#define ks__free (ks__vk_host_fns->ks__free)
#define ks__choice_parse (ks__vk_host_fns->ks__choice_parse)
#define ks__choice_read (ks__vk_host_fns->ks__choice_read)
#define ks__choice_save (ks__vk_host_fns->ks__choice_save)
#define ks__cpu_isa (ks__vk_host_fns->ks__cpu_isa)
#define ks__crc32 (ks__vk_host_fns->ks__crc32)
#define ks__fail (ks__vk_host_fns->ks__fail)
#define ks__fmt (ks__vk_host_fns->ks__fmt)
#define ks__log (ks__vk_host_fns->ks__log)
#define ks__once (ks__vk_host_fns->ks__once)
#define ks__f16_to_f32 (ks__vk_host_fns->ks__f16_to_f32)
#define ks__f32_to_f16 (ks__vk_host_fns->ks__f32_to_f16)
#define ks__op_get_info (ks__vk_host_fns->ks__op_get_info)
#define ks__rt_get_int (ks__vk_host_fns->ks__rt_get_int)
#define ks__rt_name (ks__vk_host_fns->ks__rt_name)
#define ks__rt_numel (ks__vk_host_fns->ks__rt_numel)
#define ks__concat_geometry (ks__vk_host_fns->ks__concat_geometry)
#define ks__conv_check_slope (ks__vk_host_fns->ks__conv_check_slope)
#define ks__conv_geometry (ks__vk_host_fns->ks__conv_geometry)
#define ks__matmul_geometry (ks__vk_host_fns->ks__matmul_geometry)
#define ks__mp_landmark_dims (ks__vk_host_fns->ks__mp_landmark_dims)
#define ks__pack_geometry (ks__vk_host_fns->ks__pack_geometry)
#define ks__pad_geometry (ks__vk_host_fns->ks__pad_geometry)
#define ks__pool_geometry (ks__vk_host_fns->ks__pool_geometry)
#define ks__reduce_axes (ks__vk_host_fns->ks__reduce_axes)
#define ks__resize_geometry (ks__vk_host_fns->ks__resize_geometry)
#define ks__slice_geometry (ks__vk_host_fns->ks__slice_geometry)
#define ks__split_geometry (ks__vk_host_fns->ks__split_geometry)
#define ks__tconv_geometry (ks__vk_host_fns->ks__tconv_geometry)
#define ks__transpose_geometry (ks__vk_host_fns->ks__transpose_geometry)
#define ks__unpack_geometry (ks__vk_host_fns->ks__unpack_geometry)

#endif /* KS_VK_MODULE */
#endif /* KESTREL_VULKAN_VK_HOST_REDIRECT_H */
