/* Our own declarations of the subset of webgpu.h that the WebGPU backend uses.
 *
 * Written by hand (no third-party header) for two Dawn builds, x86-64 LP64:
 *  - "bun": npm bun-webgpu-linux-x64@0.1.7's libwebgpu_wrapper.so (upstream Dawn 7adb0440d5,
 *    2025-06-10; exports the C API);
 *  - "node": npm webgpu@0.6.2's dist/linux-x64/dawn.node (a Node addon built in 2026-09 from a
 *    Dawn newer than 1e975e28f9, 2026-08-22; its C API is in the ELF symbol table only).
 * Their ABIs agree on everything below except (1) the instance descriptor (bun: a
 * WGPUInstanceCapabilities member; node: required instance features and limits) and (2) the
 * feature numbers (ShaderF16 is 0xa in one and 0xb in the other, ...). Those are explicit: two
 * instance-descriptor types, and the feature numbers read from the table `tz_wgpu_abi` that the
 * loader selects by which library it loaded (dawn_load.c: tz_wgpu_abi_bun / tz_wgpu_abi_node).
 * tests/test_webgpu_abi.c checks every struct, constant and signature, and each table, against
 * the facts of its build: tests/fixtures/dawn_abi_facts_{bun,node}.txt, written by
 * scripts/dawn_abi_facts.py from dawn.json at the commit named in their first line.
 *
 * Functions are not declared as symbols: dawn_load.c loads the library and fills the
 * table `tz_wgpu` (one pointer per function in TZ_WGPU_FUNCS).
 */
#ifndef TZ_WEBGPU_API_H
#define TZ_WEBGPU_API_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- scalar types ---- */
typedef uint32_t WGPUBool;
typedef uint64_t WGPUFlags;
typedef WGPUFlags WGPUBufferUsage;
typedef WGPUFlags WGPUMapMode;
typedef uint32_t WGPUSType;
typedef uint32_t WGPUStatus;
typedef uint32_t WGPUCallbackMode;
typedef uint32_t WGPUAdapterType;
typedef uint32_t WGPUBackendType;
typedef uint32_t WGPUFeatureLevel;
typedef uint32_t WGPUFeatureName;
typedef uint32_t WGPUPowerPreference;
typedef uint32_t WGPURequestAdapterStatus;
typedef uint32_t WGPURequestDeviceStatus;
typedef uint32_t WGPUDeviceLostReason;
typedef uint32_t WGPUErrorType;
typedef uint32_t WGPUMapAsyncStatus;
typedef uint32_t WGPUQueueWorkDoneStatus;
typedef uint32_t WGPUQueryType;
typedef uint32_t WGPUWaitStatus;

/* ---- opaque handles ---- */
typedef struct WGPUInstanceImpl *WGPUInstance;
typedef struct WGPUAdapterImpl *WGPUAdapter;
typedef struct WGPUDeviceImpl *WGPUDevice;
typedef struct WGPUQueueImpl *WGPUQueue;
typedef struct WGPUBufferImpl *WGPUBuffer;
typedef struct WGPUShaderModuleImpl *WGPUShaderModule;
typedef struct WGPUComputePipelineImpl *WGPUComputePipeline;
typedef struct WGPUBindGroupLayoutImpl *WGPUBindGroupLayout;
typedef struct WGPUBindGroupImpl *WGPUBindGroup;
typedef struct WGPUPipelineLayoutImpl *WGPUPipelineLayout;
typedef struct WGPUCommandEncoderImpl *WGPUCommandEncoder;
typedef struct WGPUCommandBufferImpl *WGPUCommandBuffer;
typedef struct WGPUComputePassEncoderImpl *WGPUComputePassEncoder;
typedef struct WGPUQuerySetImpl *WGPUQuerySet;
typedef struct WGPUSurfaceImpl *WGPUSurface;

/* ---- constants (values from the facts file) ---- */
#define WGPUAdapterType_DiscreteGPU 0x1
#define WGPUAdapterType_IntegratedGPU 0x2
#define WGPUAdapterType_CPU 0x3
#define WGPUAdapterType_Unknown 0x4
#define WGPUBackendType_Undefined 0x0
#define WGPUBackendType_Null 0x1
#define WGPUBackendType_WebGPU 0x2
#define WGPUBackendType_D3D11 0x3
#define WGPUBackendType_D3D12 0x4
#define WGPUBackendType_Metal 0x5
#define WGPUBackendType_Vulkan 0x6
#define WGPUBackendType_OpenGL 0x7
#define WGPUBackendType_OpenGLES 0x8
#define WGPUBufferUsage_None 0x0
#define WGPUBufferUsage_MapRead 0x1
#define WGPUBufferUsage_MapWrite 0x2
#define WGPUBufferUsage_CopySrc 0x4
#define WGPUBufferUsage_CopyDst 0x8
#define WGPUBufferUsage_Uniform 0x40
#define WGPUBufferUsage_Storage 0x80
#define WGPUBufferUsage_QueryResolve 0x200
#define WGPUCallbackMode_WaitAnyOnly 0x1
#define WGPUCallbackMode_AllowProcessEvents 0x2
#define WGPUCallbackMode_AllowSpontaneous 0x3
#define WGPUDeviceLostReason_Unknown 0x1
#define WGPUDeviceLostReason_Destroyed 0x2
#define WGPUDeviceLostReason_CallbackCancelled 0x3
#define WGPUDeviceLostReason_FailedCreation 0x4
#define WGPUErrorType_NoError 0x1
#define WGPUErrorType_Validation 0x2
#define WGPUErrorType_OutOfMemory 0x3
#define WGPUErrorType_Internal 0x4
#define WGPUErrorType_Unknown 0x5
#define WGPUFeatureLevel_Core 0x2
/* Feature numbers differ between the two builds: read from the loaded build's table. */
#define WGPUFeatureName_TimestampQuery (tz_wgpu_abi->FeatureName_TimestampQuery)
#define WGPUFeatureName_ShaderF16 (tz_wgpu_abi->FeatureName_ShaderF16)
#define WGPUFeatureName_Subgroups (tz_wgpu_abi->FeatureName_Subgroups)
#define WGPUFeatureName_ChromiumExperimentalSubgroupMatrix \
  (tz_wgpu_abi->FeatureName_ChromiumExperimentalSubgroupMatrix)
#define WGPUInstanceFeatureName_TimedWaitAny 0x1 /* node only */
#define WGPUSType_AdapterPropertiesSubgroupMatrixConfigs 0x5003b
#define WGPUSubgroupMatrixComponentType_F32 0x1
#define WGPUSubgroupMatrixComponentType_F16 0x2
#define WGPUSubgroupMatrixComponentType_U32 0x3
#define WGPUSubgroupMatrixComponentType_I32 0x4
#define WGPUMapAsyncStatus_Success 0x1
#define WGPUMapMode_Read 0x1
#define WGPUPowerPreference_HighPerformance 0x2
#define WGPUQueryType_Timestamp 0x2
#define WGPUQueueWorkDoneStatus_Success 0x1
#define WGPURequestAdapterStatus_Success 0x1
#define WGPURequestDeviceStatus_Success 0x1
#define WGPUSType_ShaderSourceWGSL 0x2
#define WGPUSType_DawnTogglesDescriptor 0x5000a
#define WGPUStatus_Success 0x1
#define WGPUWaitStatus_Success 0x1
#define WGPUWaitStatus_TimedOut 0x2
#define WGPU_LIMIT_U32_UNDEFINED 0xffffffffu
#define WGPU_LIMIT_U64_UNDEFINED 0xffffffffffffffffull
#define WGPU_STRLEN SIZE_MAX
#define WGPU_WHOLE_SIZE 0xffffffffffffffffull

/* ---- callbacks ---- */
typedef struct WGPUStringView {
  char const *data;
  size_t length; /* WGPU_STRLEN: nul-terminated */
} WGPUStringView;

/* X(typedef name, (parameters)) for the callback types (all return void), as the facts file spells
 * them ("typedef void (*Name)(...)"). */
#define TZ_WGPU_CALLBACKS(X)                                                                    \
  X(WGPUBufferMapCallback,                                                                      \
    (WGPUMapAsyncStatus status, WGPUStringView message, void* userdata1, void* userdata2))      \
  X(WGPUDeviceLostCallback,                                                                     \
    (WGPUDevice const * device, WGPUDeviceLostReason reason, WGPUStringView message,            \
     void* userdata1, void* userdata2))                                                         \
  X(WGPUQueueWorkDoneCallback,                                                                  \
    (WGPUQueueWorkDoneStatus status, WGPUStringView message, void* userdata1, void* userdata2)) \
  X(WGPURequestAdapterCallback,                                                                 \
    (WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView message,              \
     void* userdata1, void* userdata2))                                                         \
  X(WGPURequestDeviceCallback,                                                                  \
    (WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message,                 \
     void* userdata1, void* userdata2))                                                         \
  X(WGPUUncapturedErrorCallback,                                                                \
    (WGPUDevice const * device, WGPUErrorType type, WGPUStringView message, void* userdata1,    \
     void* userdata2))

#define TZ_WGPU_CB_TYPEDEF(name, args) typedef void(*name) args;
TZ_WGPU_CALLBACKS(TZ_WGPU_CB_TYPEDEF)
#undef TZ_WGPU_CB_TYPEDEF

/* Asynchronous pipeline creation (the tokenizer compiles its kernels while the GPU works). The
 * facts file lists wgpuDeviceCreateComputePipelineAsync (checked with the functions below) but
 * not its callback type and callback-info struct: these follow webgpu.h's one pattern for every
 * callback (status first, then the result, the message and the two user pointers; info = chain,
 * mode, callback, userdata1, userdata2, as the WGPURequestDeviceCallbackInfo the facts do list),
 * at the header's commit (7adb0440d5). */
typedef uint32_t WGPUCreatePipelineAsyncStatus;
#define WGPUCreatePipelineAsyncStatus_Success 0x1
typedef void (*WGPUCreateComputePipelineAsyncCallback)(WGPUCreatePipelineAsyncStatus status,
                                                       WGPUComputePipeline pipeline, WGPUStringView message,
                                                       void *userdata1, void *userdata2);

/* ---- structs ---- */
typedef struct WGPUChainedStruct {
  struct WGPUChainedStruct const *next;
  WGPUSType sType;
} WGPUChainedStruct;

typedef struct WGPUFuture {
  uint64_t id;
} WGPUFuture;

typedef struct WGPUFutureWaitInfo {
  WGPUFuture future;
  WGPUBool completed;
} WGPUFutureWaitInfo;

/* bun only (the facts' WGPUInstanceCapabilities and WGPUInstanceDescriptor of 7adb0440d5) */
typedef struct WGPUInstanceCapabilities {
  WGPUChainedStruct *nextInChain;
  WGPUBool timedWaitAnyEnable;
  size_t timedWaitAnyMaxCount;
} WGPUInstanceCapabilities;

typedef struct WGPUInstanceDescriptorBun {
  WGPUChainedStruct const *nextInChain;
  WGPUInstanceCapabilities capabilities;
} WGPUInstanceDescriptorBun;

/* node only: the instance descriptor of Dawn since late 2025 (timed WaitAny is an instance
 * feature there) */
typedef uint32_t WGPUInstanceFeatureName;
typedef struct WGPUInstanceLimits {
  WGPUChainedStruct *nextInChain;
  size_t timedWaitAnyMaxCount;
} WGPUInstanceLimits;

typedef struct WGPUInstanceDescriptor {
  WGPUChainedStruct const *nextInChain;
  size_t requiredFeatureCount;
  WGPUInstanceFeatureName const *requiredFeatures;
  WGPUInstanceLimits const *requiredLimits;
} WGPUInstanceDescriptor;

/* The subgroup-matrix configurations an adapter offers (chained to WGPUAdapterInfo). The
 * element differs: 20 bytes in bun's Dawn, 28 in dawn.node's (two more uint32_t after K, found in
 * the binary: tests/fixtures/dawn_abi_facts_node.txt says how). So `configs` is untyped and read
 * through tz_wgpu_sgmat_config(), which uses the loaded build's element size. */
typedef uint32_t WGPUSubgroupMatrixComponentType;
typedef struct WGPUSubgroupMatrixConfigBun { /* bun */
  WGPUSubgroupMatrixComponentType componentType;
  WGPUSubgroupMatrixComponentType resultComponentType;
  uint32_t M;
  uint32_t N;
  uint32_t K;
} WGPUSubgroupMatrixConfigBun;
typedef struct WGPUSubgroupMatrixConfig { /* node */
  WGPUSubgroupMatrixComponentType componentType;
  WGPUSubgroupMatrixComponentType resultComponentType;
  uint32_t M;
  uint32_t N;
  uint32_t K;
  uint32_t unknown5; /* 32 on the H200 (its subgroup size?) */
  uint32_t unknown6; /* 32 on the H200 */
} WGPUSubgroupMatrixConfig;

typedef struct WGPUAdapterPropertiesSubgroupMatrixConfigs {
  WGPUChainedStruct chain;
  size_t configCount;
  void const *configs; /* configCount elements of the build's WGPUSubgroupMatrixConfig */
} WGPUAdapterPropertiesSubgroupMatrixConfigs;

typedef struct WGPURequestAdapterOptions {
  WGPUChainedStruct const *nextInChain;
  WGPUFeatureLevel featureLevel;
  WGPUPowerPreference powerPreference;
  WGPUBool forceFallbackAdapter;
  WGPUBackendType backendType;
  WGPUSurface compatibleSurface;
} WGPURequestAdapterOptions;

typedef struct WGPURequestAdapterCallbackInfo {
  WGPUChainedStruct const *nextInChain;
  WGPUCallbackMode mode;
  WGPURequestAdapterCallback callback;
  void *userdata1;
  void *userdata2;
} WGPURequestAdapterCallbackInfo;

typedef struct WGPURequestDeviceCallbackInfo {
  WGPUChainedStruct const *nextInChain;
  WGPUCallbackMode mode;
  WGPURequestDeviceCallback callback;
  void *userdata1;
  void *userdata2;
} WGPURequestDeviceCallbackInfo;

typedef struct WGPUCreateComputePipelineAsyncCallbackInfo {
  WGPUChainedStruct const *nextInChain;
  WGPUCallbackMode mode;
  WGPUCreateComputePipelineAsyncCallback callback;
  void *userdata1;
  void *userdata2;
} WGPUCreateComputePipelineAsyncCallbackInfo;

typedef struct WGPUAdapterInfo {
  WGPUChainedStruct *nextInChain;
  WGPUStringView vendor;
  WGPUStringView architecture;
  WGPUStringView device;
  WGPUStringView description;
  WGPUBackendType backendType;
  WGPUAdapterType adapterType;
  uint32_t vendorID;
  uint32_t deviceID;
  uint32_t subgroupMinSize;
  uint32_t subgroupMaxSize;
} WGPUAdapterInfo;

typedef struct WGPULimits {
  WGPUChainedStruct *nextInChain;
  uint32_t maxTextureDimension1D;
  uint32_t maxTextureDimension2D;
  uint32_t maxTextureDimension3D;
  uint32_t maxTextureArrayLayers;
  uint32_t maxBindGroups;
  uint32_t maxBindGroupsPlusVertexBuffers;
  uint32_t maxBindingsPerBindGroup;
  uint32_t maxDynamicUniformBuffersPerPipelineLayout;
  uint32_t maxDynamicStorageBuffersPerPipelineLayout;
  uint32_t maxSampledTexturesPerShaderStage;
  uint32_t maxSamplersPerShaderStage;
  uint32_t maxStorageBuffersPerShaderStage;
  uint32_t maxStorageTexturesPerShaderStage;
  uint32_t maxUniformBuffersPerShaderStage;
  uint64_t maxUniformBufferBindingSize;
  uint64_t maxStorageBufferBindingSize;
  uint32_t minUniformBufferOffsetAlignment;
  uint32_t minStorageBufferOffsetAlignment;
  uint32_t maxVertexBuffers;
  uint64_t maxBufferSize;
  uint32_t maxVertexAttributes;
  uint32_t maxVertexBufferArrayStride;
  uint32_t maxInterStageShaderVariables;
  uint32_t maxColorAttachments;
  uint32_t maxColorAttachmentBytesPerSample;
  uint32_t maxComputeWorkgroupStorageSize;
  uint32_t maxComputeInvocationsPerWorkgroup;
  uint32_t maxComputeWorkgroupSizeX;
  uint32_t maxComputeWorkgroupSizeY;
  uint32_t maxComputeWorkgroupSizeZ;
  uint32_t maxComputeWorkgroupsPerDimension;
  uint32_t maxImmediateSize;
} WGPULimits;

typedef struct WGPUSupportedFeatures {
  size_t featureCount;
  WGPUFeatureName const *features;
} WGPUSupportedFeatures;

typedef struct WGPUQueueDescriptor {
  WGPUChainedStruct const *nextInChain;
  WGPUStringView label;
} WGPUQueueDescriptor;

typedef struct WGPUDeviceLostCallbackInfo {
  WGPUChainedStruct const *nextInChain;
  WGPUCallbackMode mode;
  WGPUDeviceLostCallback callback;
  void *userdata1;
  void *userdata2;
} WGPUDeviceLostCallbackInfo;

typedef struct WGPUUncapturedErrorCallbackInfo {
  WGPUChainedStruct const *nextInChain;
  WGPUUncapturedErrorCallback callback;
  void *userdata1;
  void *userdata2;
} WGPUUncapturedErrorCallbackInfo;

typedef struct WGPUDeviceDescriptor {
  WGPUChainedStruct const *nextInChain;
  WGPUStringView label;
  size_t requiredFeatureCount;
  WGPUFeatureName const *requiredFeatures;
  WGPULimits const *requiredLimits;
  WGPUQueueDescriptor defaultQueue;
  WGPUDeviceLostCallbackInfo deviceLostCallbackInfo;
  WGPUUncapturedErrorCallbackInfo uncapturedErrorCallbackInfo;
} WGPUDeviceDescriptor;

typedef struct WGPUDawnTogglesDescriptor {
  WGPUChainedStruct chain;
  size_t enabledToggleCount;
  const char *const *enabledToggles;
  size_t disabledToggleCount;
  const char *const *disabledToggles;
} WGPUDawnTogglesDescriptor;

typedef struct WGPUBufferDescriptor {
  WGPUChainedStruct const *nextInChain;
  WGPUStringView label;
  WGPUBufferUsage usage;
  uint64_t size;
  WGPUBool mappedAtCreation;
} WGPUBufferDescriptor;

typedef struct WGPUBufferMapCallbackInfo {
  WGPUChainedStruct const *nextInChain;
  WGPUCallbackMode mode;
  WGPUBufferMapCallback callback;
  void *userdata1;
  void *userdata2;
} WGPUBufferMapCallbackInfo;

typedef struct WGPUQueueWorkDoneCallbackInfo {
  WGPUChainedStruct const *nextInChain;
  WGPUCallbackMode mode;
  WGPUQueueWorkDoneCallback callback;
  void *userdata1;
  void *userdata2;
} WGPUQueueWorkDoneCallbackInfo;

typedef struct WGPUShaderModuleDescriptor {
  WGPUChainedStruct const *nextInChain;
  WGPUStringView label;
} WGPUShaderModuleDescriptor;

typedef struct WGPUShaderSourceWGSL {
  WGPUChainedStruct chain;
  WGPUStringView code;
} WGPUShaderSourceWGSL;

typedef struct WGPUConstantEntry {
  WGPUChainedStruct const *nextInChain;
  WGPUStringView key;
  double value;
} WGPUConstantEntry;

typedef struct WGPUComputeState {
  WGPUChainedStruct const *nextInChain;
  WGPUShaderModule module;
  WGPUStringView entryPoint;
  size_t constantCount;
  WGPUConstantEntry const *constants;
} WGPUComputeState;

typedef struct WGPUComputePipelineDescriptor {
  WGPUChainedStruct const *nextInChain;
  WGPUStringView label;
  WGPUPipelineLayout layout; /* NULL: layout derived from the shader ("auto") */
  WGPUComputeState compute;
} WGPUComputePipelineDescriptor;

typedef struct WGPUBindGroupEntry {
  WGPUChainedStruct const *nextInChain;
  uint32_t binding;
  WGPUBuffer buffer;
  uint64_t offset;
  uint64_t size;
  void *sampler;     /* WGPUSampler, unused */
  void *textureView; /* WGPUTextureView, unused */
} WGPUBindGroupEntry;

typedef struct WGPUBindGroupDescriptor {
  WGPUChainedStruct const *nextInChain;
  WGPUStringView label;
  WGPUBindGroupLayout layout;
  size_t entryCount;
  WGPUBindGroupEntry const *entries;
} WGPUBindGroupDescriptor;

typedef struct WGPUCommandEncoderDescriptor {
  WGPUChainedStruct const *nextInChain;
  WGPUStringView label;
} WGPUCommandEncoderDescriptor;

typedef struct WGPUCommandBufferDescriptor {
  WGPUChainedStruct const *nextInChain;
  WGPUStringView label;
} WGPUCommandBufferDescriptor;

typedef struct WGPUPassTimestampWrites {
  WGPUChainedStruct const *nextInChain;
  WGPUQuerySet querySet;
  uint32_t beginningOfPassWriteIndex;
  uint32_t endOfPassWriteIndex;
} WGPUPassTimestampWrites;

typedef struct WGPUComputePassDescriptor {
  WGPUChainedStruct const *nextInChain;
  WGPUStringView label;
  WGPUPassTimestampWrites const *timestampWrites;
} WGPUComputePassDescriptor;

typedef struct WGPUQuerySetDescriptor {
  WGPUChainedStruct const *nextInChain;
  WGPUStringView label;
  WGPUQueryType type;
  uint32_t count;
} WGPUQuerySetDescriptor;

/* ---- functions: X(return type, name, (parameters)) ----
 * The parameter text is compared with the facts file's signature by the ABI test. */
#define TZ_WGPU_FUNCS(X)                                                                        \
  X(WGPUInstance, wgpuCreateInstance, (WGPUInstanceDescriptor const * descriptor))              \
  X(WGPUFuture, wgpuInstanceRequestAdapter,                                                     \
    (WGPUInstance instance, WGPURequestAdapterOptions const * options,                          \
     WGPURequestAdapterCallbackInfo callbackInfo))                                              \
  X(WGPUWaitStatus, wgpuInstanceWaitAny,                                                        \
    (WGPUInstance instance, size_t futureCount, WGPUFutureWaitInfo * futures,                   \
     uint64_t timeoutNS))                                                                       \
  X(void, wgpuInstanceProcessEvents, (WGPUInstance instance))                                   \
  X(void, wgpuInstanceRelease, (WGPUInstance instance))                                         \
  X(WGPUStatus, wgpuAdapterGetInfo, (WGPUAdapter adapter, WGPUAdapterInfo * info))              \
  X(void, wgpuAdapterInfoFreeMembers, (WGPUAdapterInfo value))                                  \
  X(void, wgpuAdapterPropertiesSubgroupMatrixConfigsFreeMembers,                                \
    (WGPUAdapterPropertiesSubgroupMatrixConfigs value))                                         \
  X(WGPUStatus, wgpuAdapterGetLimits, (WGPUAdapter adapter, WGPULimits * limits))               \
  X(void, wgpuAdapterGetFeatures, (WGPUAdapter adapter, WGPUSupportedFeatures * features))      \
  X(WGPUBool, wgpuAdapterHasFeature, (WGPUAdapter adapter, WGPUFeatureName feature))            \
  X(void, wgpuSupportedFeaturesFreeMembers, (WGPUSupportedFeatures value))                      \
  X(WGPUFuture, wgpuAdapterRequestDevice,                                                       \
    (WGPUAdapter adapter, WGPUDeviceDescriptor const * options,                                 \
     WGPURequestDeviceCallbackInfo callbackInfo))                                               \
  X(void, wgpuAdapterRelease, (WGPUAdapter adapter))                                            \
  X(WGPUQueue, wgpuDeviceGetQueue, (WGPUDevice device))                                         \
  X(WGPUStatus, wgpuDeviceGetLimits, (WGPUDevice device, WGPULimits * limits))                  \
  X(WGPUBool, wgpuDeviceHasFeature, (WGPUDevice device, WGPUFeatureName feature))               \
  X(WGPUBuffer, wgpuDeviceCreateBuffer,                                                         \
    (WGPUDevice device, WGPUBufferDescriptor const * descriptor))                               \
  X(WGPUShaderModule, wgpuDeviceCreateShaderModule,                                             \
    (WGPUDevice device, WGPUShaderModuleDescriptor const * descriptor))                         \
  X(WGPUComputePipeline, wgpuDeviceCreateComputePipeline,                                       \
    (WGPUDevice device, WGPUComputePipelineDescriptor const * descriptor))                      \
  X(WGPUFuture, wgpuDeviceCreateComputePipelineAsync,                                           \
    (WGPUDevice device, WGPUComputePipelineDescriptor const * descriptor,                       \
     WGPUCreateComputePipelineAsyncCallbackInfo callbackInfo))                                  \
  X(WGPUBindGroup, wgpuDeviceCreateBindGroup,                                                   \
    (WGPUDevice device, WGPUBindGroupDescriptor const * descriptor))                            \
  X(WGPUCommandEncoder, wgpuDeviceCreateCommandEncoder,                                         \
    (WGPUDevice device, WGPUCommandEncoderDescriptor const * descriptor))                       \
  X(WGPUQuerySet, wgpuDeviceCreateQuerySet,                                                     \
    (WGPUDevice device, WGPUQuerySetDescriptor const * descriptor))                             \
  X(void, wgpuDeviceDestroy, (WGPUDevice device))                                               \
  X(void, wgpuDeviceRelease, (WGPUDevice device))                                               \
  X(void, wgpuBufferDestroy, (WGPUBuffer buffer))                                               \
  X(void, wgpuBufferRelease, (WGPUBuffer buffer))                                               \
  X(WGPUFuture, wgpuBufferMapAsync,                                                             \
    (WGPUBuffer buffer, WGPUMapMode mode, size_t offset, size_t size,                           \
     WGPUBufferMapCallbackInfo callbackInfo))                                                   \
  X(void const *, wgpuBufferGetConstMappedRange, (WGPUBuffer buffer, size_t offset, size_t size)) \
  X(void, wgpuBufferUnmap, (WGPUBuffer buffer))                                                 \
  X(void, wgpuShaderModuleRelease, (WGPUShaderModule shaderModule))                             \
  X(WGPUBindGroupLayout, wgpuComputePipelineGetBindGroupLayout,                                 \
    (WGPUComputePipeline computePipeline, uint32_t groupIndex))                                 \
  X(void, wgpuComputePipelineRelease, (WGPUComputePipeline computePipeline))                    \
  X(void, wgpuBindGroupLayoutRelease, (WGPUBindGroupLayout bindGroupLayout))                    \
  X(void, wgpuBindGroupRelease, (WGPUBindGroup bindGroup))                                      \
  X(WGPUComputePassEncoder, wgpuCommandEncoderBeginComputePass,                                 \
    (WGPUCommandEncoder commandEncoder, WGPUComputePassDescriptor const * descriptor))          \
  X(void, wgpuCommandEncoderCopyBufferToBuffer,                                                 \
    (WGPUCommandEncoder commandEncoder, WGPUBuffer source, uint64_t sourceOffset,               \
     WGPUBuffer destination, uint64_t destinationOffset, uint64_t size))                        \
  X(void, wgpuCommandEncoderResolveQuerySet,                                                    \
    (WGPUCommandEncoder commandEncoder, WGPUQuerySet querySet, uint32_t firstQuery,             \
     uint32_t queryCount, WGPUBuffer destination, uint64_t destinationOffset))                  \
  X(WGPUCommandBuffer, wgpuCommandEncoderFinish,                                                \
    (WGPUCommandEncoder commandEncoder, WGPUCommandBufferDescriptor const * descriptor))        \
  X(void, wgpuCommandEncoderRelease, (WGPUCommandEncoder commandEncoder))                       \
  X(void, wgpuComputePassEncoderSetPipeline,                                                    \
    (WGPUComputePassEncoder computePassEncoder, WGPUComputePipeline pipeline))                  \
  X(void, wgpuComputePassEncoderSetBindGroup,                                                   \
    (WGPUComputePassEncoder computePassEncoder, uint32_t groupIndex, WGPUBindGroup group,       \
     size_t dynamicOffsetCount, uint32_t const * dynamicOffsets))                               \
  X(void, wgpuComputePassEncoderDispatchWorkgroups,                                             \
    (WGPUComputePassEncoder computePassEncoder, uint32_t workgroupCountX,                       \
     uint32_t workgroupCountY, uint32_t workgroupCountZ))                                       \
  X(void, wgpuComputePassEncoderEnd, (WGPUComputePassEncoder computePassEncoder))               \
  X(void, wgpuComputePassEncoderRelease, (WGPUComputePassEncoder computePassEncoder))           \
  X(void, wgpuCommandBufferRelease, (WGPUCommandBuffer commandBuffer))                          \
  X(void, wgpuQueueSubmit,                                                                      \
    (WGPUQueue queue, size_t commandCount, WGPUCommandBuffer const * commands))                 \
  X(void, wgpuQueueWriteBuffer,                                                                 \
    (WGPUQueue queue, WGPUBuffer buffer, uint64_t bufferOffset, void const * data, size_t size)) \
  X(WGPUFuture, wgpuQueueOnSubmittedWorkDone,                                                   \
    (WGPUQueue queue, WGPUQueueWorkDoneCallbackInfo callbackInfo))                              \
  X(void, wgpuQueueRelease, (WGPUQueue queue))                                                  \
  X(void, wgpuQuerySetDestroy, (WGPUQuerySet querySet))                                         \
  X(void, wgpuQuerySetRelease, (WGPUQuerySet querySet))

/* The function table filled by tz_wgpu_load(). */
typedef struct {
#define TZ_WGPU_FIELD(ret, name, args) ret(*name) args;
  TZ_WGPU_FUNCS(TZ_WGPU_FIELD)
#undef TZ_WGPU_FIELD
} tz_wgpu_fns;
extern tz_wgpu_fns tz_wgpu;

/* A name of an enum value, as webgpu.h spells it without the type's prefix ("ShaderF16"). */
typedef struct {
  const char *name;
  uint32_t value;
} tz_wgpu_named;
/* What differs between the two builds' ABIs (values checked by tests/test_webgpu_abi.c
 * against each build's facts). */
typedef struct tz_wgpu_abi_t {
  const char *name; /* "bun" or "node" */
  const char *what; /* the package and Dawn commit, for `tezgah info` */
  uint32_t FeatureName_TimestampQuery;
  uint32_t FeatureName_ShaderF16;
  uint32_t FeatureName_Subgroups;
  uint32_t FeatureName_ChromiumExperimentalSubgroupMatrix;
  size_t SubgroupMatrixConfig_size; /* bytes per element of AdapterPropertiesSubgroupMatrixConfigs */
  /* every WGPUFeatureName of the build, for `tezgah info` (the numbers differ between builds,
   * so one list cannot name both); NULL, 0 in the browser's table */
  const tz_wgpu_named *feature_names;
  size_t n_feature_names;
} tz_wgpu_abi_t;
/* The loaded build's name of feature `v` ("ShaderF16"), or NULL where its list has none. */
const char *tz_wgpu_feature_name(uint32_t v);
extern const tz_wgpu_abi_t tz_wgpu_abi_bun, tz_wgpu_abi_node;
#ifdef __wasm__
/* The wasm build's table (wgpu_wasm.c): the browser's navigator.gpu through JavaScript imports. */
extern const tz_wgpu_abi_t tz_wgpu_abi_browser;
/* Fill *f with the page's imports (web/wgpu_imports.mjs) and the C wrappers of wgpu_wasm.c:
 * 0, or -1 with tz_err (the page has no navigator.gpu, or the layouts disagree). */
int tz_wgpu_wasm_load(tz_wgpu_fns *f);
/* The wasm32 layout (members, sizes, constants) handed to the JavaScript, as JSON (malloc'd). */
char *tz_wgpu_wasm_layout_json(void);
#endif
/* The loaded build's table (&tz_wgpu_abi_bun before a load, so constants read sanely). */
extern const tz_wgpu_abi_t *tz_wgpu_abi;
/* X(field) for every constant of tz_wgpu_abi_t (the test compares tz_wgpu_abi_<build>.field with
 * the facts' `const WGPU<field> = ...`). */
#define TZ_WGPU_ABI_CONSTS(X)                                                                   \
  X(FeatureName_TimestampQuery) X(FeatureName_ShaderF16) X(FeatureName_Subgroups)               \
  X(FeatureName_ChromiumExperimentalSubgroupMatrix)

/* Load Dawn and resolve every function of TZ_WGPU_FUNCS. Search: $TEZGAH_WEBGPU_LIB, else the
 * repository's .deps/dawn/ (dawn.node, then libwebgpu_wrapper.so; see dawn_load.c for the
 * order and why). A library that exports the C API (bun) is used through dlsym; one that does
 * not (dawn.node) through its ELF symbol table, with Node-API imports satisfied by
 * libtz_napi_stub.so. 0 on success (also when already loaded); -1 with one tz_err() line naming
 * the path and the problem (missing, stripped, missing symbol, unknown build, ABI mismatch). */
int tz_wgpu_load(void);
/* The path of the loaded library (NULL before a successful load). */
const char *tz_wgpu_lib_path(void);
/* Why this library was chosen ("TEZGAH_WEBGPU_LIB", "default: ..."), NULL before a load. */
const char *tz_wgpu_lib_reason(void);
/* Element i of p->configs in the node layout, whichever build is loaded (bun: unknown5/6 = 0). */
WGPUSubgroupMatrixConfig tz_wgpu_sgmat_config(const WGPUAdapterPropertiesSubgroupMatrixConfigs *p, size_t i);
/* Create an instance with timed WaitAny in the loaded build's descriptor layout (NULL on
 * failure). */
WGPUInstance tz_wgpu_create_instance(void);

/* Adapter request options shared by every WebGPU user: Vulkan, core feature level, high
 * performance, and under the node Dawn the adapter toggles vulkan_enable_f16_on_nvidia (Dawn
 * withholds ShaderF16 on NVIDIA by default, crbug.com/42251215) and allow_unsafe_apis (exposes
 * ChromiumExperimentalSubgroupMatrix and its configurations): docs/PERF.md's probe. bun's Dawn
 * knows neither toggle. The environment variable `env` (comma-separated, empty for none)
 * replaces the list, for either Dawn. `t` holds the chained toggles: it must outlive the request. */
typedef struct {
  WGPUDawnTogglesDescriptor desc;
  const char *names[8];
  char buf[256];
} tz_wgpu_toggles;
void tz_wgpu_adapter_options(WGPURequestAdapterOptions *o, tz_wgpu_toggles *t, const char *env);

/* ---- helpers of every WebGPU user (the backend, the standalone sgmat op, the tokenizer) ---- */
/* A view of the NUL-terminated `s` (NULL: the empty view). */
static inline WGPUStringView tz_wgpu_sv(const char *s) {
  WGPUStringView v = {s, s ? strlen(s) : 0};
  return v;
}
/* Copy the view `v` into dst[cap], NUL-terminated and cut to cap - 1 bytes (a length of
 * WGPU_STRLEN: up to the NUL of v.data; no data: the empty string). cap >= 1. */
static inline void tz_wgpu_sv_copy(char *dst, size_t cap, WGPUStringView v) {
  size_t n = v.data ? (v.length == WGPU_STRLEN ? strlen(v.data) : v.length) : 0;
  if (n >= cap) n = cap - 1;
  if (n) memcpy(dst, v.data, n);
  dst[n] = 0;
}
/* What an adapter or device request answered: its status (WGPURequestAdapterStatus or
 * WGPURequestDeviceStatus), the adapter or device (NULL on failure) and Dawn's message. */
typedef struct {
  int status;
  void *handle;
  char msg[512];
} tz_wgpu_req;
/* The callbacks of wgpuInstanceRequestAdapter / wgpuAdapterRequestDevice: userdata1 is the
 * tz_wgpu_req to fill (dawn_load.c). */
void tz_wgpu_on_adapter(WGPURequestAdapterStatus status, WGPUAdapter adapter, WGPUStringView message, void *u1,
                        void *u2);
void tz_wgpu_on_device(WGPURequestDeviceStatus status, WGPUDevice device, WGPUStringView message, void *u1,
                       void *u2);

/* ---- lists for the ABI test ---- */
/* X(struct, member) for every member declared above. */
#define TZ_WGPU_MEMBERS(X)                                                                      \
  X(WGPUStringView, data) X(WGPUStringView, length)                                             \
  X(WGPUChainedStruct, next) X(WGPUChainedStruct, sType)                                        \
  X(WGPUFuture, id)                                                                             \
  X(WGPUFutureWaitInfo, future) X(WGPUFutureWaitInfo, completed)                                \
  X(WGPUAdapterPropertiesSubgroupMatrixConfigs, chain)                                          \
  X(WGPUAdapterPropertiesSubgroupMatrixConfigs, configCount)                                    \
  X(WGPUAdapterPropertiesSubgroupMatrixConfigs, configs)                                        \
  X(WGPURequestAdapterOptions, nextInChain) X(WGPURequestAdapterOptions, featureLevel)          \
  X(WGPURequestAdapterOptions, powerPreference)                                                 \
  X(WGPURequestAdapterOptions, forceFallbackAdapter)                                            \
  X(WGPURequestAdapterOptions, backendType) X(WGPURequestAdapterOptions, compatibleSurface)      \
  X(WGPURequestAdapterCallbackInfo, nextInChain) X(WGPURequestAdapterCallbackInfo, mode)        \
  X(WGPURequestAdapterCallbackInfo, callback) X(WGPURequestAdapterCallbackInfo, userdata1)      \
  X(WGPURequestAdapterCallbackInfo, userdata2)                                                  \
  X(WGPURequestDeviceCallbackInfo, nextInChain) X(WGPURequestDeviceCallbackInfo, mode)          \
  X(WGPURequestDeviceCallbackInfo, callback) X(WGPURequestDeviceCallbackInfo, userdata1)        \
  X(WGPURequestDeviceCallbackInfo, userdata2)                                                   \
  X(WGPUAdapterInfo, nextInChain) X(WGPUAdapterInfo, vendor) X(WGPUAdapterInfo, architecture)   \
  X(WGPUAdapterInfo, device) X(WGPUAdapterInfo, description) X(WGPUAdapterInfo, backendType)    \
  X(WGPUAdapterInfo, adapterType) X(WGPUAdapterInfo, vendorID) X(WGPUAdapterInfo, deviceID)     \
  X(WGPUAdapterInfo, subgroupMinSize) X(WGPUAdapterInfo, subgroupMaxSize)                       \
  X(WGPULimits, nextInChain) X(WGPULimits, maxTextureDimension1D)                               \
  X(WGPULimits, maxTextureDimension2D) X(WGPULimits, maxTextureDimension3D)                     \
  X(WGPULimits, maxTextureArrayLayers) X(WGPULimits, maxBindGroups)                             \
  X(WGPULimits, maxBindGroupsPlusVertexBuffers) X(WGPULimits, maxBindingsPerBindGroup)          \
  X(WGPULimits, maxDynamicUniformBuffersPerPipelineLayout)                                      \
  X(WGPULimits, maxDynamicStorageBuffersPerPipelineLayout)                                      \
  X(WGPULimits, maxSampledTexturesPerShaderStage) X(WGPULimits, maxSamplersPerShaderStage)      \
  X(WGPULimits, maxStorageBuffersPerShaderStage) X(WGPULimits, maxStorageTexturesPerShaderStage) \
  X(WGPULimits, maxUniformBuffersPerShaderStage) X(WGPULimits, maxUniformBufferBindingSize)     \
  X(WGPULimits, maxStorageBufferBindingSize) X(WGPULimits, minUniformBufferOffsetAlignment)     \
  X(WGPULimits, minStorageBufferOffsetAlignment) X(WGPULimits, maxVertexBuffers)                \
  X(WGPULimits, maxBufferSize) X(WGPULimits, maxVertexAttributes)                               \
  X(WGPULimits, maxVertexBufferArrayStride) X(WGPULimits, maxInterStageShaderVariables)         \
  X(WGPULimits, maxColorAttachments) X(WGPULimits, maxColorAttachmentBytesPerSample)            \
  X(WGPULimits, maxComputeWorkgroupStorageSize) X(WGPULimits, maxComputeInvocationsPerWorkgroup) \
  X(WGPULimits, maxComputeWorkgroupSizeX) X(WGPULimits, maxComputeWorkgroupSizeY)               \
  X(WGPULimits, maxComputeWorkgroupSizeZ) X(WGPULimits, maxComputeWorkgroupsPerDimension)       \
  X(WGPULimits, maxImmediateSize)                                                               \
  X(WGPUSupportedFeatures, featureCount) X(WGPUSupportedFeatures, features)                     \
  X(WGPUQueueDescriptor, nextInChain) X(WGPUQueueDescriptor, label)                             \
  X(WGPUDeviceLostCallbackInfo, nextInChain) X(WGPUDeviceLostCallbackInfo, mode)                \
  X(WGPUDeviceLostCallbackInfo, callback) X(WGPUDeviceLostCallbackInfo, userdata1)              \
  X(WGPUDeviceLostCallbackInfo, userdata2)                                                      \
  X(WGPUUncapturedErrorCallbackInfo, nextInChain) X(WGPUUncapturedErrorCallbackInfo, callback)  \
  X(WGPUUncapturedErrorCallbackInfo, userdata1) X(WGPUUncapturedErrorCallbackInfo, userdata2)   \
  X(WGPUDeviceDescriptor, nextInChain) X(WGPUDeviceDescriptor, label)                           \
  X(WGPUDeviceDescriptor, requiredFeatureCount) X(WGPUDeviceDescriptor, requiredFeatures)       \
  X(WGPUDeviceDescriptor, requiredLimits) X(WGPUDeviceDescriptor, defaultQueue)                 \
  X(WGPUDeviceDescriptor, deviceLostCallbackInfo)                                               \
  X(WGPUDeviceDescriptor, uncapturedErrorCallbackInfo)                                          \
  X(WGPUDawnTogglesDescriptor, chain) X(WGPUDawnTogglesDescriptor, enabledToggleCount)          \
  X(WGPUDawnTogglesDescriptor, enabledToggles) X(WGPUDawnTogglesDescriptor, disabledToggleCount) \
  X(WGPUDawnTogglesDescriptor, disabledToggles)                                                 \
  X(WGPUBufferDescriptor, nextInChain) X(WGPUBufferDescriptor, label)                           \
  X(WGPUBufferDescriptor, usage) X(WGPUBufferDescriptor, size)                                  \
  X(WGPUBufferDescriptor, mappedAtCreation)                                                     \
  X(WGPUBufferMapCallbackInfo, nextInChain) X(WGPUBufferMapCallbackInfo, mode)                  \
  X(WGPUBufferMapCallbackInfo, callback) X(WGPUBufferMapCallbackInfo, userdata1)                \
  X(WGPUBufferMapCallbackInfo, userdata2)                                                       \
  X(WGPUQueueWorkDoneCallbackInfo, nextInChain) X(WGPUQueueWorkDoneCallbackInfo, mode)          \
  X(WGPUQueueWorkDoneCallbackInfo, callback) X(WGPUQueueWorkDoneCallbackInfo, userdata1)        \
  X(WGPUQueueWorkDoneCallbackInfo, userdata2)                                                   \
  X(WGPUShaderModuleDescriptor, nextInChain) X(WGPUShaderModuleDescriptor, label)               \
  X(WGPUShaderSourceWGSL, chain) X(WGPUShaderSourceWGSL, code)                                  \
  X(WGPUConstantEntry, nextInChain) X(WGPUConstantEntry, key) X(WGPUConstantEntry, value)       \
  X(WGPUComputeState, nextInChain) X(WGPUComputeState, module) X(WGPUComputeState, entryPoint)  \
  X(WGPUComputeState, constantCount) X(WGPUComputeState, constants)                             \
  X(WGPUComputePipelineDescriptor, nextInChain) X(WGPUComputePipelineDescriptor, label)         \
  X(WGPUComputePipelineDescriptor, layout) X(WGPUComputePipelineDescriptor, compute)            \
  X(WGPUBindGroupEntry, nextInChain) X(WGPUBindGroupEntry, binding) X(WGPUBindGroupEntry, buffer) \
  X(WGPUBindGroupEntry, offset) X(WGPUBindGroupEntry, size) X(WGPUBindGroupEntry, sampler)      \
  X(WGPUBindGroupEntry, textureView)                                                            \
  X(WGPUBindGroupDescriptor, nextInChain) X(WGPUBindGroupDescriptor, label)                     \
  X(WGPUBindGroupDescriptor, layout) X(WGPUBindGroupDescriptor, entryCount)                     \
  X(WGPUBindGroupDescriptor, entries)                                                           \
  X(WGPUCommandEncoderDescriptor, nextInChain) X(WGPUCommandEncoderDescriptor, label)           \
  X(WGPUCommandBufferDescriptor, nextInChain) X(WGPUCommandBufferDescriptor, label)             \
  X(WGPUPassTimestampWrites, nextInChain) X(WGPUPassTimestampWrites, querySet)                  \
  X(WGPUPassTimestampWrites, beginningOfPassWriteIndex)                                         \
  X(WGPUPassTimestampWrites, endOfPassWriteIndex)                                               \
  X(WGPUComputePassDescriptor, nextInChain) X(WGPUComputePassDescriptor, label)                 \
  X(WGPUComputePassDescriptor, timestampWrites)                                                 \
  X(WGPUQuerySetDescriptor, nextInChain) X(WGPUQuerySetDescriptor, label)                       \
  X(WGPUQuerySetDescriptor, type) X(WGPUQuerySetDescriptor, count)

/* X(struct) for every struct declared above. */
#define TZ_WGPU_STRUCTS(X)                                                                      \
  X(WGPUStringView) X(WGPUChainedStruct) X(WGPUFuture) X(WGPUFutureWaitInfo)                    \
  X(WGPUAdapterPropertiesSubgroupMatrixConfigs)                                                 \
  X(WGPURequestAdapterOptions)                                                                  \
  X(WGPURequestAdapterCallbackInfo) X(WGPURequestDeviceCallbackInfo) X(WGPUAdapterInfo)         \
  X(WGPULimits) X(WGPUSupportedFeatures) X(WGPUQueueDescriptor) X(WGPUDeviceLostCallbackInfo)   \
  X(WGPUUncapturedErrorCallbackInfo) X(WGPUDeviceDescriptor) X(WGPUDawnTogglesDescriptor)       \
  X(WGPUBufferDescriptor) X(WGPUBufferMapCallbackInfo) X(WGPUQueueWorkDoneCallbackInfo)         \
  X(WGPUShaderModuleDescriptor) X(WGPUShaderSourceWGSL) X(WGPUConstantEntry) X(WGPUComputeState) \
  X(WGPUComputePipelineDescriptor) X(WGPUBindGroupEntry) X(WGPUBindGroupDescriptor)             \
  X(WGPUCommandEncoderDescriptor) X(WGPUCommandBufferDescriptor) X(WGPUPassTimestampWrites)     \
  X(WGPUComputePassDescriptor) X(WGPUQuerySetDescriptor)

/* X(name) for every constant declared above. */
#define TZ_WGPU_CONSTS(X)                                                                       \
  X(WGPUAdapterType_DiscreteGPU) X(WGPUAdapterType_IntegratedGPU) X(WGPUAdapterType_CPU)        \
  X(WGPUAdapterType_Unknown) X(WGPUBackendType_Undefined) X(WGPUBackendType_Null)               \
  X(WGPUBackendType_WebGPU) X(WGPUBackendType_D3D11) X(WGPUBackendType_D3D12)                   \
  X(WGPUBackendType_Metal) X(WGPUBackendType_Vulkan) X(WGPUBackendType_OpenGL)                  \
  X(WGPUBackendType_OpenGLES) X(WGPUBufferUsage_None) X(WGPUBufferUsage_MapRead)                \
  X(WGPUBufferUsage_MapWrite) X(WGPUBufferUsage_CopySrc) X(WGPUBufferUsage_CopyDst)             \
  X(WGPUBufferUsage_Uniform) X(WGPUBufferUsage_Storage) X(WGPUBufferUsage_QueryResolve)         \
  X(WGPUCallbackMode_WaitAnyOnly) X(WGPUCallbackMode_AllowProcessEvents)                        \
  X(WGPUCallbackMode_AllowSpontaneous) X(WGPUDeviceLostReason_Unknown)                          \
  X(WGPUDeviceLostReason_Destroyed) X(WGPUDeviceLostReason_CallbackCancelled)                   \
  X(WGPUDeviceLostReason_FailedCreation) X(WGPUErrorType_NoError) X(WGPUErrorType_Validation)   \
  X(WGPUErrorType_OutOfMemory) X(WGPUErrorType_Internal) X(WGPUErrorType_Unknown)               \
  X(WGPUFeatureLevel_Core) X(WGPUSType_AdapterPropertiesSubgroupMatrixConfigs)                  \
  X(WGPUSubgroupMatrixComponentType_F32) X(WGPUSubgroupMatrixComponentType_F16)                 \
  X(WGPUSubgroupMatrixComponentType_U32) X(WGPUSubgroupMatrixComponentType_I32)                 \
  X(WGPUMapAsyncStatus_Success) X(WGPUMapMode_Read) X(WGPUPowerPreference_HighPerformance)      \
  X(WGPUQueryType_Timestamp) X(WGPUQueueWorkDoneStatus_Success)                                 \
  X(WGPURequestAdapterStatus_Success) X(WGPURequestDeviceStatus_Success)                        \
  X(WGPUSType_ShaderSourceWGSL) X(WGPUSType_DawnTogglesDescriptor) X(WGPUStatus_Success)        \
  X(WGPUWaitStatus_Success) X(WGPUWaitStatus_TimedOut) X(WGPU_LIMIT_U32_UNDEFINED)              \
  X(WGPU_LIMIT_U64_UNDEFINED) X(WGPU_STRLEN) X(WGPU_WHOLE_SIZE)

/* Per-build structs: X(our type, the facts' name); members X(our type, facts' name, member). */
#define TZ_WGPU_STRUCTS_BUN(X)                                                                  \
  X(WGPUInstanceCapabilities, WGPUInstanceCapabilities) X(WGPUInstanceDescriptorBun, WGPUInstanceDescriptor) \
  X(WGPUSubgroupMatrixConfigBun, WGPUSubgroupMatrixConfig)
#define TZ_WGPU_MEMBERS_BUN(X)                                                                  \
  X(WGPUSubgroupMatrixConfigBun, WGPUSubgroupMatrixConfig, componentType)                       \
  X(WGPUSubgroupMatrixConfigBun, WGPUSubgroupMatrixConfig, resultComponentType)                 \
  X(WGPUSubgroupMatrixConfigBun, WGPUSubgroupMatrixConfig, M)                                   \
  X(WGPUSubgroupMatrixConfigBun, WGPUSubgroupMatrixConfig, N)                                   \
  X(WGPUSubgroupMatrixConfigBun, WGPUSubgroupMatrixConfig, K)                                   \
  X(WGPUInstanceCapabilities, WGPUInstanceCapabilities, nextInChain)                            \
  X(WGPUInstanceCapabilities, WGPUInstanceCapabilities, timedWaitAnyEnable)                     \
  X(WGPUInstanceCapabilities, WGPUInstanceCapabilities, timedWaitAnyMaxCount)                   \
  X(WGPUInstanceDescriptorBun, WGPUInstanceDescriptor, nextInChain)                             \
  X(WGPUInstanceDescriptorBun, WGPUInstanceDescriptor, capabilities)
#define TZ_WGPU_STRUCTS_NODE(X)                                                                 \
  X(WGPUInstanceLimits, WGPUInstanceLimits) X(WGPUInstanceDescriptor, WGPUInstanceDescriptor)   \
  X(WGPUSubgroupMatrixConfig, WGPUSubgroupMatrixConfig)
#define TZ_WGPU_MEMBERS_NODE(X)                                                                 \
  X(WGPUSubgroupMatrixConfig, WGPUSubgroupMatrixConfig, componentType)                          \
  X(WGPUSubgroupMatrixConfig, WGPUSubgroupMatrixConfig, resultComponentType)                    \
  X(WGPUSubgroupMatrixConfig, WGPUSubgroupMatrixConfig, M)                                      \
  X(WGPUSubgroupMatrixConfig, WGPUSubgroupMatrixConfig, N)                                      \
  X(WGPUSubgroupMatrixConfig, WGPUSubgroupMatrixConfig, K)                                      \
  X(WGPUSubgroupMatrixConfig, WGPUSubgroupMatrixConfig, unknown5)                               \
  X(WGPUSubgroupMatrixConfig, WGPUSubgroupMatrixConfig, unknown6)                               \
  X(WGPUInstanceLimits, WGPUInstanceLimits, nextInChain)                                        \
  X(WGPUInstanceLimits, WGPUInstanceLimits, timedWaitAnyMaxCount)                               \
  X(WGPUInstanceDescriptor, WGPUInstanceDescriptor, nextInChain)                                \
  X(WGPUInstanceDescriptor, WGPUInstanceDescriptor, requiredFeatureCount)                       \
  X(WGPUInstanceDescriptor, WGPUInstanceDescriptor, requiredFeatures)                           \
  X(WGPUInstanceDescriptor, WGPUInstanceDescriptor, requiredLimits)
/* node-only constants */
#define TZ_WGPU_CONSTS_NODE(X) X(WGPUInstanceFeatureName_TimedWaitAny)

#endif
