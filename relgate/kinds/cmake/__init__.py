"""The cmake kind: a CMake project read without configuring it (CMakeLists.txt, CMakePresets.json, CTest)."""
