# `cmake --build build --target package` makes a .deb: the binary, the systemd unit, a config
# and policy under /etc/superagent (conffiles: an upgrade never overwrites a team's edits), the
# docs, and maintainer scripts that create the `superagent` system user.
include(GNUInstallDirs)

# The packaged config is the commented example with the two settings a service needs.
file(READ ${PROJECT_SOURCE_DIR}/config/superagent.example.yaml _example)
set(_packaged "${_example}")
string(REPLACE "\ndata_dir: ./superagent-data\n" "\ndata_dir: /var/lib/superagent\n" _packaged "${_packaged}")
string(REPLACE "\npolicy_file: \"\"\n" "\npolicy_file: policy.yaml\n" _packaged "${_packaged}")
string(FIND "${_packaged}" "data_dir: /var/lib/superagent" _has_data_dir)
string(FIND "${_packaged}" "policy_file: policy.yaml" _has_policy)
if(_has_data_dir EQUAL -1 OR _has_policy EQUAL -1)
  message(FATAL_ERROR "config/superagent.example.yaml changed shape: update cmake/Package.cmake")
endif()
file(WRITE ${PROJECT_BINARY_DIR}/package/superagent.yaml "${_packaged}")

install(TARGETS superagent RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES config/superagent.service DESTINATION /lib/systemd/system)  # Debian 12 packages ship units here
# The same package makes a worker host (issue 36): its unit, never enabled by the package.
install(FILES config/superagent-worker.service DESTINATION /lib/systemd/system)
install(FILES ${PROJECT_BINARY_DIR}/package/superagent.yaml DESTINATION /etc/superagent)
# A policy that lets nobody ask until the team lists its people, and says so (issue 34): the
# example, installed live, allowed its sample logins alice and bob — real accounts on github.com.
install(FILES config/policy.packaged.yaml DESTINATION /etc/superagent RENAME policy.yaml)
install(FILES config/superagent.example.yaml config/policy.example.yaml config/worker.example.yaml README.md LICENSE
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} FILES_MATCHING PATTERN "*.md")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME superagent)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "self-hosted software-engineering colleague for one team and one GitHub repository")
set(CPACK_PACKAGE_CONTACT "superagent maintainers <superagent@localhost>")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_STRIP_FILES ON)  # the debug info stays in the build tree
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# bubblewrap: execution.sandbox is on by default, and serve refuses to start without it.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser, git, ca-certificates, bubblewrap")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/cmake/debian/conffiles
    ${PROJECT_SOURCE_DIR}/cmake/debian/postinst
    ${PROJECT_SOURCE_DIR}/cmake/debian/prerm
    ${PROJECT_SOURCE_DIR}/cmake/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
