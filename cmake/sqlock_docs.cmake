# docs-api: the API reference of the public headers (include/sqlock/, sqlock/version.hpp) with
# Doxygen, into BUILD/docs/api/html; an undocumented public entity fails it. Not part of `all`.
find_package(Doxygen QUIET)
set(SQLOCK_API_DOCS_DIR ${PROJECT_BINARY_DIR}/docs/api)
if(DOXYGEN_FOUND)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/Doxyfile.in ${PROJECT_BINARY_DIR}/Doxyfile @ONLY)
  add_custom_target(docs-api
    COMMAND ${CMAKE_COMMAND} -E remove_directory ${SQLOCK_API_DOCS_DIR}
    COMMAND ${DOXYGEN_EXECUTABLE} ${PROJECT_BINARY_DIR}/Doxyfile
    WORKING_DIRECTORY ${PROJECT_BINARY_DIR}
    COMMENT "API reference (Doxygen) in ${SQLOCK_API_DOCS_DIR}/html"
    VERBATIM)
endif()
if(SQLOCK_BUILD_TESTS)
  if(DOXYGEN_FOUND)
    add_test(NAME docs.api_reference
             COMMAND ${CMAKE_COMMAND} --build ${PROJECT_BINARY_DIR} --target docs-api)
  else()  # skipped, or failed when every test must run
    add_test(NAME docs.api_reference
             COMMAND sh -c "echo 'doxygen not found (Debian: doxygen)'; \
[ \"$SQLOCK_TEST_REQUIRE_ALL\" = 1 ] && exit 1; exit 77")
    set_tests_properties(docs.api_reference PROPERTIES SKIP_RETURN_CODE 77)
  endif()
endif()
