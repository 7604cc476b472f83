# The installed package, split by find_package component (core, each backend, prometheus,
# asio):
#   LIBDIR/cmake/sqlock/  sqlock-config.cmake, its version file, sqlock-core-targets.cmake and
#                         per component sqlock-<c>-component.cmake (its dependencies, found only
#                         when the component is asked for) + sqlock-<c>-targets.cmake
#   LIBDIR/pkgconfig/     sqlock-core.pc, sqlock-<c>.pc per component, and sqlock.pc (the core
#                         and every backend of this build, as sqlock::sqlock)
# A static build's component .pc files carry their libraries' dependencies in Libs/Requires
# (a static library always needs them); a shared build's in Libs.private/Requires.private.
include(CMakePackageConfigHelpers)
install(DIRECTORY include/sqlock DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(DIRECTORY migrations sql DESTINATION ${CMAKE_INSTALL_DATADIR}/sqlock COMPONENT runtime)

set(sqlock_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/sqlock)
install(EXPORT sqlock-core-targets NAMESPACE sqlock:: DESTINATION ${sqlock_cmake_dir}
        COMPONENT dev)
get_property(SQLOCK_CONFIG_COMPONENTS GLOBAL PROPERTY SQLOCK_COMPONENTS)
get_property(SQLOCK_CONFIG_BACKENDS GLOBAL PROPERTY SQLOCK_BACKEND_COMPONENTS)
foreach(c IN LISTS SQLOCK_CONFIG_COMPONENTS)
  install(EXPORT sqlock-${c}-targets NAMESPACE sqlock:: DESTINATION ${sqlock_cmake_dir}
          COMPONENT dev)
  get_property(deps GLOBAL PROPERTY SQLOCK_CONFIG_DEPENDENCIES_${c})
  list(JOIN deps "\n" deps)
  set(f ${PROJECT_BINARY_DIR}/sqlock-${c}-component.cmake)
  sqlock_write_if_changed(${f} "# sqlock component ${c}: its dependencies, then its targets \
(sqlock::${c}); included by sqlock-config.cmake when the component is asked for.
${deps}
if(NOT _sqlock_missing)
  include(\"\${CMAKE_CURRENT_LIST_DIR}/sqlock-${c}-targets.cmake\")
endif()
")
  install(FILES ${f} DESTINATION ${sqlock_cmake_dir} COMPONENT dev)
endforeach()
configure_package_config_file(cmake/sqlock-config.cmake.in
  ${PROJECT_BINARY_DIR}/sqlock-config.cmake INSTALL_DESTINATION ${sqlock_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/sqlock-config-version.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/sqlock-config.cmake
              ${PROJECT_BINARY_DIR}/sqlock-config-version.cmake
        DESTINATION ${sqlock_cmake_dir} COMPONENT dev)

# pkg-config. Each .pc file finds its prefix relative to itself, so an installed tree can move.
file(RELATIVE_PATH SQLOCK_PC_UP "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
# Writes `name`.pc from cmake/sqlock.pc.in with the pc_* variables set.
function(sqlock_write_pc name)
  foreach(v pc_requires pc_requires_private pc_libs pc_libs_private)
    list(JOIN ${v} " " ${v})
  endforeach()
  configure_file(${PROJECT_SOURCE_DIR}/cmake/sqlock.pc.in ${PROJECT_BINARY_DIR}/pc/${name}.pc
                 @ONLY)
endfunction()

set(pc_name sqlock-core)
set(pc_description "${PROJECT_DESCRIPTION}: the core (backends load as modules by URL scheme)")
set(pc_requires "")
set(pc_requires_private "")
set(pc_cflags "-I\${includedir} -std=c++20")
set(pc_libs "-L\${libdir}" -lsqlock_core -pthread)
set(pc_libs_private "")
sqlock_write_pc(sqlock-core)
set(pc_cflags "")
foreach(c IN LISTS SQLOCK_CONFIG_COMPONENTS)
  get_property(public GLOBAL PROPERTY SQLOCK_PC_REQUIRES_PUBLIC_${c})
  get_property(private GLOBAL PROPERTY SQLOCK_PC_REQUIRES_${c})
  get_property(vendor_libs GLOBAL PROPERTY SQLOCK_PC_LIBS_${c})
  # The internal static libraries the component's library links (static builds need them).
  get_target_property(linked sqlock_${c} LINK_LIBRARIES)
  set(internal "")
  foreach(l IN LISTS linked)
    if(l MATCHES "^sqlock_[a-z]+_sql$")
      list(APPEND internal -l${l})
    endif()
  endforeach()
  if(sqlock_sql IN_LIST linked)
    list(APPEND internal -lsqlock_sql)
  endif()
  set(pc_name sqlock-${c})
  set(pc_description "${PROJECT_DESCRIPTION}: sqlock::${c}")
  set(pc_libs "-L\${libdir}")
  if(c IN_LIST SQLOCK_CONFIG_BACKENDS)
    set(pc_description "${PROJECT_DESCRIPTION}: the ${c} backend, registered in the program")
    list(APPEND pc_libs "-Wl,--undefined=sqlock_builtin_${c}")
  endif()
  get_target_property(type sqlock_${c} TYPE)
  if(NOT type STREQUAL "INTERFACE_LIBRARY")  # a header-only component has no library
    list(APPEND pc_libs -lsqlock_${c})
  endif()
  set(pc_requires sqlock-core ${public})
  if(BUILD_SHARED_LIBS)
    set(pc_requires_private ${private})
    set(pc_libs_private ${vendor_libs})
  else()
    list(APPEND pc_requires ${private})
    list(APPEND pc_libs ${internal} ${vendor_libs})
    set(pc_requires_private "")
    set(pc_libs_private "")
  endif()
  list(REMOVE_DUPLICATES pc_requires)
  sqlock_write_pc(sqlock-${c})
endforeach()
set(pc_name sqlock)
set(pc_description "${PROJECT_DESCRIPTION}: the core and every backend of this build")
set(pc_requires sqlock-core)
foreach(c IN LISTS SQLOCK_CONFIG_BACKENDS)
  list(APPEND pc_requires sqlock-${c})
endforeach()
set(pc_requires_private "")
set(pc_libs "")
set(pc_libs_private "")
sqlock_write_pc(sqlock)
install(DIRECTORY ${PROJECT_BINARY_DIR}/pc/ DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT dev)
