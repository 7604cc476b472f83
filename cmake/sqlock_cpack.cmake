# Debian packages of this build, one per install component (cpack -G DEB in the build tree):
#   libsqlock                    runtime: the shared libraries (BUILD_SHARED_LIBS=ON), the
#                                migrations and lock routines (share/sqlock)
#   libsqlock-dev                dev: headers, static libraries, CMake package, pkg-config files
#   sqlock                       cli: the command, its serve module, man pages, completions
#   libsqlock-backend-<backend>  module_<backend>: the backend module loaded by URL scheme
# Dependencies on Debian's libraries come from dpkg-shlibdeps; between these packages, each
# depends on libsqlock of the same version. The packages install under CMAKE_INSTALL_PREFIX.
# cpack (and `make install`) install what is built, without building `all` first: build, then
# package (docs/install.md). In a tree with the tests, an up-to-date check of every test target
# before each cpack run would cost more than packaging.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
set(CPACK_PACKAGE_NAME sqlock)
set(CPACK_PACKAGE_VENDOR "sqlock")
set(CPACK_PACKAGE_CONTACT "sqlock maintainers <sqlock@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# Where the build was configured to install: the command and static consumers look for the
# modules there (configure with -DCMAKE_INSTALL_PREFIX=/usr for packages under /usr).
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_STRIP_FILES ON)  # the shared libraries, the modules and the command
# The static libraries of libsqlock-dev: their debug information stripped too.
set(CPACK_SQLOCK_STRIP ${CMAKE_STRIP})
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/sqlock_cpack_strip.cmake)
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)  # fast to build; the static libraries are large
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)  # CPACK_COMPONENT_<C>_DEPENDS -> Depends

set(CPACK_COMPONENT_RUNTIME_DISPLAY_NAME "sqlock library")
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "Distributed locks whose home is the database: the library and its SQL scripts")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libsqlock)
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "sqlock headers, libraries, CMake package and pkg-config files (a component's client \
libraries' -dev packages are needed to link it)")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libsqlock-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(CPACK_COMPONENT_CLI_DESCRIPTION "sqlock: run commands under a distributed lock")
set(CPACK_DEBIAN_CLI_PACKAGE_NAME sqlock)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION utils)
set(CPACK_COMPONENT_CLI_DEPENDS runtime)
set(CPACK_COMPONENTS_ALL runtime dev)
if(SQLOCK_BUILD_CLI)
  list(APPEND CPACK_COMPONENTS_ALL cli)
endif()
get_property(sqlock_module_targets GLOBAL PROPERTY SQLOCK_MODULE_TARGETS)
foreach(t IN LISTS sqlock_module_targets)
  string(REGEX REPLACE "^sqlock_(.*)_module$" "\\1" b ${t})
  string(TOUPPER module_${b} C)
  list(APPEND CPACK_COMPONENTS_ALL module_${b})
  set(CPACK_DEBIAN_${C}_PACKAGE_NAME libsqlock-backend-${b})
  set(CPACK_COMPONENT_${C}_DESCRIPTION
      "sqlock's ${b} backend module, loaded by the URL schemes it serves")
  set(CPACK_COMPONENT_${C}_DEPENDS runtime)
endforeach()
include(CPack)
