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

# CANN's library names resolve to kvflash: its build lines link -lascendcl -lnnopbase and the
# operator API, -lopapi or (CANN 8.5 split it) -lopapi_math -lopapi_transformer, and -lc_sec (the
# secure C functions, include/securec.h). Each is a symlink to libkvflash.so in the library folder.
set(KVFLASH_CANN_LIBRARY_NAMES ascendcl nnopbase opapi opapi_math opapi_transformer c_sec)
foreach(alias ${KVFLASH_CANN_LIBRARY_NAMES})
  install(CODE "execute_process(COMMAND ${CMAKE_COMMAND} -E create_symlink libkvflash.so
    \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/lib${alias}.so)")
endforeach()
# CANN's build files name ${ASCEND_HOME_PATH}/lib64 (its sample CMakeLists links
# ${ASCEND_PATH}/lib64/libascendcl.so ..., its set_env.sh puts lib64 on LD_LIBRARY_PATH). When the
# library folder is another one, lib64 gets the CANN names and the library's soname (what a program
# linked through them loads) as links into it, so the prefix can serve as ASCEND_HOME_PATH.
option(KVFLASH_INSTALL_CANN_LIB64 "Install CANN's library names under <prefix>/lib64 as well" ON)
if(KVFLASH_INSTALL_CANN_LIB64 AND NOT CMAKE_INSTALL_LIBDIR STREQUAL "lib64")
  if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
    set(KVFLASH_LIB64_TARGET_DIR "${CMAKE_INSTALL_LIBDIR}")
  else()
    set(KVFLASH_LIB64_TARGET_DIR "../${CMAKE_INSTALL_LIBDIR}")
  endif()
  set(KVFLASH_SONAME libkvflash.so.${PROJECT_VERSION_MAJOR})
  install(CODE "file(MAKE_DIRECTORY \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib64)")
  foreach(name ${KVFLASH_SONAME} ${KVFLASH_CANN_LIBRARY_NAMES})
    if(NOT name STREQUAL KVFLASH_SONAME)
      set(name lib${name}.so)
    endif()
    set(target ${KVFLASH_LIB64_TARGET_DIR}/${KVFLASH_SONAME})
    install(CODE "execute_process(COMMAND ${CMAKE_COMMAND} -E create_symlink ${target}
      \$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/lib64/${name})")
  endforeach()
endif()

install(EXPORT kvflashTargets NAMESPACE kvflash:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kvflash)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kvflashConfig.cmake.in
  ${PROJECT_BINARY_DIR}/kvflashConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kvflash)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/kvflashConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/kvflashConfig.cmake ${PROJECT_BINARY_DIR}/kvflashConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kvflash)

configure_file(${PROJECT_SOURCE_DIR}/cmake/kvflash.pc.in ${PROJECT_BINARY_DIR}/kvflash.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/kvflash.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
