# `cmake --install` and the Debian package (CPack). Layout, for prefix /usr:
#   bin/gpuledger                       -> ../lib/gpuledger/gpuledger
#   lib/gpuledger/gpuledger             the agent, doctor, report, demo
#   lib/gpuledger/stop-post             the unit's ExecStopPost: removes the pins at a last stop
#   lib/gpuledger/gpuledger-cudasim     the demo's workload generator
#   lib/gpuledger/sim/{lib,nvml}/       the demo's CUDA driver and NVML simulators
#                                       (the demo finds them beside its binary)
#   lib/systemd/system/gpuledger.service
#   share/doc/gpuledger/                README, LICENSE, operating guide, ledger format
#   share/gpuledger/                    Prometheus rules, Grafana dashboards, kustomize tree
#   /etc/gpuledger/config.yaml          the agent's configuration (a conffile)
# State lives in /var/lib/gpuledger, created by systemd (StateDirectory=).
include(GNUInstallDirs)
# `cmake --install` and `cpack` install what was built (scripts/setup.sh builds
# everything) rather than first building every test and benchmark.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
set(GL_PKGLIB lib/gpuledger)

# The workload generator finds the simulated libcuda.so.1 relative to itself,
# in the build tree (build/sim/lib) and installed alike.
set_target_properties(gpuledger-cudasim PROPERTIES BUILD_WITH_INSTALL_RPATH TRUE INSTALL_RPATH "$ORIGIN/sim/lib")
install(TARGETS gpuledger gpuledger-cudasim RUNTIME DESTINATION ${GL_PKGLIB})
install(TARGETS cudasim LIBRARY DESTINATION ${GL_PKGLIB}/sim/lib NAMELINK_SKIP)
install(TARGETS nvmlsim LIBRARY DESTINATION ${GL_PKGLIB}/sim/nvml NAMELINK_SKIP)
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/install)
file(CREATE_LINK ../${GL_PKGLIB}/gpuledger ${CMAKE_BINARY_DIR}/install/gpuledger SYMBOLIC)
install(FILES ${CMAKE_BINARY_DIR}/install/gpuledger DESTINATION ${CMAKE_INSTALL_BINDIR})

install(FILES deploy/systemd/gpuledger.service DESTINATION lib/systemd/system)
install(PROGRAMS deploy/systemd/stop-post DESTINATION ${GL_PKGLIB})
install(FILES deploy/systemd/config.yaml DESTINATION /etc/gpuledger)  # absolute: a daemon's config, as Debian puts it
install(FILES README.md LICENSE docs/operating.md docs/ledger.md docs/performance.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY deploy/prometheus deploy/grafana deploy/kubernetes DESTINATION ${CMAKE_INSTALL_DATADIR}/gpuledger)

# The Debian package: `cpack -G DEB` in build/ (or `cmake --build build --target package`).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gpuledger)
set(CPACK_PACKAGE_VENDOR "gpuledger")
set(CPACK_PACKAGE_CONTACT "gpuledger maintainers <gpuledger@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "GPU attribution and chargeback agent (eBPF on the CUDA driver)")
set(CPACK_PACKAGE_DESCRIPTION
    "Attributes GPU work to the workloads that did it with eBPF uprobes on libcuda, measures how well the GPUs were used (DCGM, NVML) and charges the cost per pod, namespace and team.")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_STRIP_FILES ON)  # debug info stays in the build tree
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # runtime library packages from dpkg-shlibdeps
# prerm/postrm: a removal stops the agent and removes its pinned probes (docs/reliability.md).
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/deploy/debian/conffiles
    ${PROJECT_SOURCE_DIR}/deploy/debian/prerm ${PROJECT_SOURCE_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
include(CPack)
