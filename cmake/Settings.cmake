# Shared compile settings every temper target links PRIVATE.
add_library(temper_settings INTERFACE)
target_compile_features(temper_settings INTERFACE cxx_std_20)
target_compile_options(temper_settings INTERFACE
  -Wall -Wextra -Wshadow -Wnon-virtual-dtor -Wformat=2 -Wimplicit-fallthrough
  $<$<BOOL:${TEMPER_WERROR}>:-Werror>
  # In a unity build every source is an included file, and GCC then takes a class beside
  # anonymous-namespace types in a .cpp for one in a header: the warning is meant for headers.
  $<$<AND:$<BOOL:${TEMPER_UNITY_BUILD}>,$<CXX_COMPILER_ID:GNU>>:-Wno-subobject-linkage>)
target_include_directories(temper_settings INTERFACE
  ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
