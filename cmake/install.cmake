# Install rules: the CLI, the worker, both libraries, the public headers, a pkg-config file
# and a CMake package (find_package(kopt): targets kopt::kopt and kopt::kopt_static).
# Layout and use: docs/install.md.
include(CMakePackageConfigHelpers)

install(TARGETS kopt_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS kopt_worker RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/kopt)
install(PROGRAMS libexec/kopt_torch_worker.py DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/kopt)
install(FILES libexec/kopt_torch_timing.py libexec/kopt_torch_sandbox.py libexec/kopt_torch_guard.py
              libexec/kopt_torch_compare.py libexec/kopt_torch_program.py
              libexec/kopt_torch_zygote.py
        DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/kopt)
if(SKBUILD)
  # the wheel (pyproject.toml, scikit-build-core): libkopt.so under its soname as one plain
  # file (a wheel holds no symbolic links), no libkopt.a, pkg-config file or CMake package
  install(FILES $<TARGET_FILE:kopt_shared> DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RENAME libkopt.so.${PROJECT_VERSION_MAJOR})
else()
  install(TARGETS kopt kopt_shared EXPORT koptTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT Development
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()
install(DIRECTORY include/kopt DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
# kopt optimize's prompt templates (src/agent/prompts.c finds them: $KOPT_PROMPTS, beside
# the program or libkopt, ../share/kopt/prompts from either, this datadir, the source tree)
install(DIRECTORY prompts/ DESTINATION ${CMAKE_INSTALL_DATADIR}/kopt/prompts
  FILES_MATCHING PATTERN "*.md")

if(SKBUILD)
  return()
endif()
# pkg-config: ${prefix} relative to the .pc file (pkg-config's ${pcfiledir}), so a prefix
# given at install time (cmake --install --prefix) or a moved one is right too; libdir and
# includedir relative to ${prefix} when they are under it
file(RELATIVE_PATH KOPT_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" KOPT_PC_TO_PREFIX "${KOPT_PC_TO_PREFIX}")
foreach(d LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${d}}")
    set(KOPT_PC_${d} "${CMAKE_INSTALL_${d}}")
  else()
    set(KOPT_PC_${d} "\${prefix}/${CMAKE_INSTALL_${d}}")
  endif()
endforeach()
# libcurl by name rather than through its .pc: its Libs.private (nghttp2, ssh2, ldap, ...)
# name static libraries a distribution does not ship; -lcurl takes the shared one.
# (libmicrohttpd is loaded at run time by `kopt mcp --http`, not linked.)
set(KOPT_PC_LIBS_PRIVATE "")
foreach(l curl ${CMAKE_DL_LIBS} pthread m)
  string(APPEND KOPT_PC_LIBS_PRIVATE " -l${l}")
endforeach()
configure_file(cmake/kopt.pc.in ${PROJECT_BINARY_DIR}/kopt.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/kopt.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

set(KOPT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/kopt)
install(EXPORT koptTargets NAMESPACE kopt:: DESTINATION ${KOPT_CMAKE_DIR})
configure_package_config_file(cmake/koptConfig.cmake.in
  ${PROJECT_BINARY_DIR}/koptConfig.cmake INSTALL_DESTINATION ${KOPT_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/koptConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/koptConfig.cmake ${PROJECT_BINARY_DIR}/koptConfigVersion.cmake
  DESTINATION ${KOPT_CMAKE_DIR})
