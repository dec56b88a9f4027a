# Sourced (from the repository root) by the scripts that run WebGPU on the GPU machine
# (../shared/docs/DEVICE.md): unpack the carried Vulkan loader packages (.gl/*.deb) and point
# Vulkan at NVIDIA's driver and tezgah at the carried Dawn (.wg/libwebgpu_wrapper.so).
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
export TEZGAH_WEBGPU_LIB=$PWD/.wg/libwebgpu_wrapper.so
