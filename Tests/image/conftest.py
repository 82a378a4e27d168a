"""The image check: the Dockerfile's runtime stage built by podman around the binary built here,
then run (podman run where it works, the image's root under chroot as the image's user where it
does not). What ran how, the image's size and each step's time are printed at the end."""

REPORT = []


def pytest_terminal_summary(terminalreporter):
    if REPORT:
        terminalreporter.section("image check")
        for line in REPORT:
            terminalreporter.write_line(line)
