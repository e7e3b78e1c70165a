# cmake -DPACKAGE_FIND_VERSION=... -DF=tbringConfigVersion.cmake -P: what
# find_package() would learn from the version file, TRUE or FALSE.
include("${F}")
execute_process(COMMAND ${CMAKE_COMMAND} -E echo "${PACKAGE_VERSION_COMPATIBLE}")
