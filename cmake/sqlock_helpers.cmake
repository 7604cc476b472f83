# Helpers shared by the core, the backends and the tests.

# Writes `content` to `path` only when it differs (keeps rebuilds minimal).
function(sqlock_write_if_changed path content)
  if(EXISTS ${path})
    file(READ ${path} old)
    if(old STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE ${path} "${content}")
endfunction()

# Warnings, position-independent code and hidden symbols (only what SQLOCK_API marks is
# exported) for every sqlock target; a shared library gets a versioned SONAME.
function(sqlock_target_defaults target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor)
  if(SQLOCK_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON
                        CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  get_target_property(type ${target} TYPE)
  # Libraries, modules and the command run from the build tree with their install RPATH
  # ($ORIGIN-relative: the layouts match), which leaves no placeholder entries for the loader
  # to search at every start.
  if(type MATCHES "^(SHARED|MODULE)_LIBRARY$" OR target STREQUAL "sqlock_cli")
    set_target_properties(${target} PROPERTIES BUILD_WITH_INSTALL_RPATH ON)
  endif()
  if(type STREQUAL "SHARED_LIBRARY")
    set_target_properties(${target} PROPERTIES
      VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
      INSTALL_RPATH "$ORIGIN")
  endif()
endfunction()

# The find_package component of what the calling folder declares: its name (src/backends/<name>,
# src/prometheus); src/core is "core".
function(sqlock_current_component var)
  get_filename_component(n ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  set(${var} ${n} PARENT_SCOPE)
endfunction()

# Installs `target` (libraries to LIBDIR) into the export set of find_package component
# `component` (default: core), sqlock-<component>-targets.cmake.
function(sqlock_install_library target)
  set(component core)
  if(ARGC GREATER 1)
    set(component ${ARGV1})
  endif()
  install(TARGETS ${target} EXPORT sqlock-${component}-targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
                  NAMELINK_COMPONENT dev)
endfunction()

# Declares find_package component `name` (its targets installed with
# sqlock_install_library(target name)); BACKEND: a backend, part of sqlock::sqlock and sqlock.pc.
function(sqlock_add_component name)
  set_property(GLOBAL APPEND PROPERTY SQLOCK_COMPONENTS ${name})
  if("BACKEND" IN_LIST ARGN)
    set_property(GLOBAL APPEND PROPERTY SQLOCK_BACKEND_COMPONENTS ${name})
  endif()
endfunction()

# An internal library `target` (alias sqlock::<export_name>): always static and
# position-independent, linked into whichever library or module uses it, exported (with the
# core: it needs no vendor library) for static consumers of those, its headers
# (beside its sources under src/) never installed.
function(sqlock_add_internal target export_name)
  add_library(${target} STATIC ${ARGN})
  add_library(sqlock::${export_name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${export_name})
  target_link_libraries(${target} PUBLIC sqlock_sql)
  sqlock_target_defaults(${target})
  sqlock_install_library(${target})
endfunction()

# The one file embedder (SQL migrations and routines, the admin page, the Redis Lua scripts):
# sets `var` to one C++ line per file of ARGN, made from `row` with @NAME@ (the file's name),
# @STEM@ (its name without extension), @SHA1@ (of its text) and @TEXT@ (its text as a raw
# string literal) replaced. Editing a file re-runs CMake, which regenerates the embedded copy.
function(sqlock_embed_rows var row)
  set(rows "")
  foreach(f IN LISTS ARGN)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${f})
    get_filename_component(name ${f} NAME)
    get_filename_component(stem ${f} NAME_WE)
    file(READ ${f} text)
    if(text MATCHES "\\)sqlock_embed\"")
      message(FATAL_ERROR "${f} contains the raw-string delimiter )sqlock_embed\"")
    endif()
    string(SHA1 sha1 "${text}")
    string(REPLACE "@NAME@" "${name}" line "${row}")
    string(REPLACE "@STEM@" "${stem}" line "${line}")
    string(REPLACE "@SHA1@" "${sha1}" line "${line}")
    string(REPLACE "@TEXT@" "R\"sqlock_embed(${text})sqlock_embed\"" line "${line}")
    string(APPEND rows "${line}\n")
  endforeach()
  set(${var} "${rows}" PARENT_SCOPE)
endfunction()

# Embeds migrations/<db>/V*.sql and sql/<db>/*.sql into `target` as
# `const sqlock::sql::bundle& sqlock::sql::bundle_<db>()`.
function(sqlock_embed_sql target db)
  file(GLOB migrations CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/migrations/${db}/V*.sql)
  file(GLOB routines CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/sql/${db}/*.sql)
  list(SORT migrations)
  list(SORT routines)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/sqlock_sql_${db}.cpp)
  set(c "// Generated by CMake from migrations/${db}/ and sql/${db}/.\n")
  string(APPEND c "#include \"sql/bundle.hpp\"\n\nnamespace sqlock::sql {\n")
  sqlock_embed_rows(migration_entries "      {\"@NAME@\", @TEXT@}," ${migrations})
  sqlock_embed_rows(routine_entries "      {\"@NAME@\", @TEXT@}," ${routines})
  string(APPEND c "const bundle& bundle_${db}() {\n  static const bundle b{\"${db}\",\n")
  string(APPEND c "    {\n${migration_entries}    },\n    {\n${routine_entries}    }};\n")
  string(APPEND c "  return b;\n}\n}  // namespace sqlock::sql\n")
  sqlock_write_if_changed(${out} "${c}")
  target_sources(${target} PRIVATE ${out})
endfunction()

# Declares a backend: the library sqlock_<name> (alias sqlock::<name>, the find_package
# component <name>) from `sources`, installed and exported, and (SQLOCK_BUILD_MODULES) the
# module libsqlock-backend-<name>.so that the core loads for the backend's URL `schemes`
# (sqlock_backend_schemes()). A program linking the library registers the backend: the
# library's static initializer adds it (linker option --undefined keeps that object). Extra
# dependencies for the installed CMake config are added with sqlock_config_dependency(),
# pkg-config requirements with sqlock_pc_requires() and sqlock_pc_libs().
function(sqlock_add_backend name)
  set(gen ${CMAKE_CURRENT_BINARY_DIR}/sqlock_builtin_${name}.cpp)
  sqlock_write_if_changed(${gen} "// Generated by CMake: adds the ${name} backend to the program \
that links its library, and exports its registration for the module.\n\
#include \"sqlock/backend.hpp\"\n\nnamespace sqlock::backends {\nvoid register_${name}();\n\
}  // namespace sqlock::backends\n\nextern \"C\" SQLOCK_API void sqlock_register_${name}() {\n\
  sqlock::backends::register_${name}();\n}\n\nextern \"C\" SQLOCK_API const bool \
sqlock_builtin_${name} = sqlock::detail::add_builtin(&sqlock_register_${name});\n")
  add_library(sqlock_${name} ${ARGN} ${gen})
  add_library(sqlock::${name} ALIAS sqlock_${name})
  set_target_properties(sqlock_${name} PROPERTIES EXPORT_NAME ${name})
  target_link_libraries(sqlock_${name} PUBLIC sqlock_core PRIVATE sqlock_sql)
  target_link_options(sqlock_${name} INTERFACE "LINKER:--undefined=sqlock_builtin_${name}")
  sqlock_target_defaults(sqlock_${name})
  sqlock_install_library(sqlock_${name} ${name})
  sqlock_add_component(${name} BACKEND)
  if(SQLOCK_BUILD_MODULES)
    set(mod ${CMAKE_CURRENT_BINARY_DIR}/sqlock_module_${name}.cpp)
    sqlock_write_if_changed(${mod} "// Generated by CMake: the entry point of the ${name} \
backend module.\n#include \"sqlock/backend.hpp\"\n#include \"sqlock/version.hpp\"\n\n\
extern \"C\" SQLOCK_API void sqlock_register_${name}();  // in the backend library\n\n\
SQLOCK_BACKEND_MODULE(&sqlock_register_${name})\n")
    add_library(sqlock_${name}_module MODULE ${mod})
    set_target_properties(sqlock_${name}_module PROPERTIES
      PREFIX "lib" OUTPUT_NAME sqlock-backend-${name}
      LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/${SQLOCK_MODULE_DIR})
    if(BUILD_SHARED_LIBS)  # the backend library in LIBDIR, wherever installed
      set_target_properties(sqlock_${name}_module PROPERTIES
                            INSTALL_RPATH "$ORIGIN/${SQLOCK_MODULE_TO_LIBDIR}")
    endif()
    target_link_libraries(sqlock_${name}_module PRIVATE sqlock_${name})
    # Every symbol resolved at link time; in a static build the module carries its own copy
    # of the static libraries it uses, bound inside the module (--exclude-libs).
    target_link_options(sqlock_${name}_module PRIVATE "LINKER:--no-undefined"
                        $<$<NOT:$<BOOL:${BUILD_SHARED_LIBS}>>:LINKER:--exclude-libs,ALL>)
    sqlock_target_defaults(sqlock_${name}_module)
    install(TARGETS sqlock_${name}_module LIBRARY DESTINATION ${SQLOCK_MODULE_DIR}
            COMPONENT module_${name})
    set_property(GLOBAL APPEND PROPERTY SQLOCK_MODULE_TARGETS sqlock_${name}_module)
  endif()
endfunction()

# The URL schemes backend `name` serves: the core loads its module for them.
function(sqlock_backend_schemes name)
  foreach(s IN LISTS ARGN)
    set_property(GLOBAL APPEND PROPERTY SQLOCK_MODULE_SCHEMES "${s}=${name}")
  endforeach()
endfunction()

# A line of CMake the installed config of the calling folder's component runs before it loads
# the component's targets (sqlock-<component>-component.cmake). Lines call the config's helpers,
# which record what is missing instead of failing, so that an optional component can be absent:
#   sqlock_need_package(<Package> [args...])        find_package(<Package> args QUIET)
#   sqlock_need_pkg(<PREFIX> <module>)               pkg_check_modules(... IMPORTED_TARGET GLOBAL)
#   sqlock_need(<condition variable> <what>)          anything else found by hand
function(sqlock_config_dependency line)
  sqlock_current_component(c)
  set_property(GLOBAL APPEND PROPERTY SQLOCK_CONFIG_DEPENDENCIES_${c} "${line}")
endfunction()

# A pkg-config module the calling folder's component requires (sqlock-<component>.pc); PUBLIC:
# its headers are part of the component's API (always in Requires), else Requires.private
# for a shared build.
function(sqlock_pc_requires module)
  sqlock_current_component(c)
  if("PUBLIC" IN_LIST ARGN)
    set_property(GLOBAL APPEND PROPERTY SQLOCK_PC_REQUIRES_PUBLIC_${c} "${module}")
  else()
    set_property(GLOBAL APPEND PROPERTY SQLOCK_PC_REQUIRES_${c} "${module}")
  endif()
endfunction()

# Linker flags for client libraries without a pkg-config file (e.g. -lzookeeper_mt) the calling
# folder's component needs (Libs.private of a shared build, Libs of a static one).
function(sqlock_pc_libs)
  sqlock_current_component(c)
  set_property(GLOBAL APPEND PROPERTY SQLOCK_PC_LIBS_${c} ${ARGN})
endfunction()

# Stops the configure with what to do when a backend's library is missing: the Debian package
# that has it, or the option that leaves the backend out. `found` is the variable the find call
# set (a <PREFIX>_FOUND or a find_path/find_library result).
function(sqlock_require_found found what package backend)
  if(NOT ${found})
    string(TOUPPER ${backend} B)
    message(FATAL_ERROR "${what} not found (Debian: ${package}); install it, or configure with "
                        "-DSQLOCK_WITH_${B}=OFF")
  endif()
endfunction()
