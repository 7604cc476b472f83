# CPack pre-build script (CPACK_PRE_BUILD_SCRIPTS): removes the debug information from the
# static libraries staged for the packages. CPACK_STRIP_FILES strips the shared libraries, the
# modules and the command only; `strip --strip-debug` keeps an archive's symbol table, so the
# libraries still link.
file(GLOB_RECURSE archives "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*.a")
foreach(a IN LISTS archives)
  execute_process(COMMAND "${CPACK_SQLOCK_STRIP}" --strip-debug "${a}" RESULT_VARIABLE rc
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "strip --strip-debug ${a}: ${err}")
  endif()
endforeach()
