// sd-bus from libsystemd (libsystemd-dev), for the agent's desktop notifications (issue 16): the freedesktop
// notification service on the session bus. Only non-variadic calls are used from Swift.
#include <systemd/sd-bus.h>
#include <sys/eventfd.h>
#include <poll.h>
