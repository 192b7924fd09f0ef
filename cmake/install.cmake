# Installation: headers (with the generated kvflash/version.h), the shared library (plus the CANN
# library names as aliases), the kvflash program, a CMake package (find_package(kvflash); the
# kvflash::kvflash target carries cxx_std_20) and a pkg-config file. kvflash_internal (the static
# library of the tests, the reference and the program) is not installed.
include(CMakePackageConfigHelpers)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${KVFLASH_GENERATED_INCLUDE}/kvflash/version.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kvflash)
# The targets installed, and kvflash_installed, which builds them: scripts/demo.sh builds it, so
# that `cmake --install` works after it (tests/cli.cmake checks). A target of its own, because
# with Ninja `--target kvflash` names the program's file (OUTPUT_NAME kvflash), not the library.
set(KVFLASH_INSTALLED_TARGETS kvflash)
install(TARGETS kvflash EXPORT kvflashTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET kvflash_cli)
  list(APPEND KVFLASH_INSTALLED_TARGETS kvflash_cli)
  install(TARGETS kvflash_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

add_custom_target(kvflash_installed)
add_dependencies(kvflash_installed ${KVFLASH_INSTALLED_TARGETS})

# CANN build lines link -lascendcl -lopapi -lnnopbase: make each name resolve to kvflash.
foreach(alias ascendcl opapi nnopbase)
  install(CODE "execute_process(COMMAND ${CMAKE_COMMAND} -E create_symlink libkvflash.so
    \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/lib${alias}.so)")
endforeach()

install(EXPORT kvflashTargets NAMESPACE kvflash:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kvflash)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kvflashConfig.cmake.in
  ${PROJECT_BINARY_DIR}/kvflashConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kvflash)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/kvflashConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/kvflashConfig.cmake ${PROJECT_BINARY_DIR}/kvflashConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kvflash)

configure_file(${PROJECT_SOURCE_DIR}/cmake/kvflash.pc.in ${PROJECT_BINARY_DIR}/kvflash.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/kvflash.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
