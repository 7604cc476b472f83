# Finds Debian's SOCI (libsoci-dev ships neither a CMake package nor a pkg-config file) and
# defines GLOBAL imported targets for it. Used by the SOCI backend's build and, installed next
# to sqlock-config.cmake, by consumers of an installed sqlock (the static libsqlock_soci needs
# them at link time):
#   sqlock_soci_dep::core, ::sqlite3, ::postgresql, ::mysql   (soci_core, soci_<db>)
#   sqlock_soci_dep::mariadb                                   (libmariadb, raw CALL draining)
# The PostgreSQL and SQLite client libraries come from find_package(PostgreSQL/SQLite3).
include_guard(GLOBAL)
find_path(SQLOCK_SOCI_INCLUDE_DIR soci/soci.h)
find_path(SQLOCK_MARIADB_INCLUDE_DIR mysql.h PATH_SUFFIXES mariadb mysql)
find_library(SQLOCK_SOCI_CORE_LIBRARY soci_core)
find_library(SQLOCK_SOCI_SQLITE3_LIBRARY soci_sqlite3)
find_library(SQLOCK_SOCI_POSTGRESQL_LIBRARY soci_postgresql)
find_library(SQLOCK_SOCI_MYSQL_LIBRARY soci_mysql)
find_library(SQLOCK_MARIADB_LIBRARY NAMES mariadb mysqlclient)
# soci-postgresql.h includes libpq-fe.h.
find_path(SQLOCK_LIBPQ_INCLUDE_DIR libpq-fe.h PATH_SUFFIXES postgresql)

function(sqlock_soci_import name lib)
  if(lib AND NOT TARGET sqlock_soci_dep::${name})
    add_library(sqlock_soci_dep::${name} UNKNOWN IMPORTED GLOBAL)
    set_target_properties(sqlock_soci_dep::${name} PROPERTIES IMPORTED_LOCATION "${lib}")
    if(ARGN)
      set_target_properties(sqlock_soci_dep::${name} PROPERTIES
                            INTERFACE_INCLUDE_DIRECTORIES "${ARGN}")
    endif()
  endif()
endfunction()

if(SQLOCK_SOCI_INCLUDE_DIR AND SQLOCK_SOCI_CORE_LIBRARY)
  sqlock_soci_import(core "${SQLOCK_SOCI_CORE_LIBRARY}" "${SQLOCK_SOCI_INCLUDE_DIR}")
  sqlock_soci_import(sqlite3 "${SQLOCK_SOCI_SQLITE3_LIBRARY}")
  sqlock_soci_import(postgresql "${SQLOCK_SOCI_POSTGRESQL_LIBRARY}" ${SQLOCK_LIBPQ_INCLUDE_DIR})
  sqlock_soci_import(mysql "${SQLOCK_SOCI_MYSQL_LIBRARY}")
endif()
if(SQLOCK_MARIADB_INCLUDE_DIR AND SQLOCK_MARIADB_LIBRARY)
  sqlock_soci_import(mariadb "${SQLOCK_MARIADB_LIBRARY}" "${SQLOCK_MARIADB_INCLUDE_DIR}")
endif()
