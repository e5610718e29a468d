// sd-bus from libsystemd, loaded at run time (issue 24 part 1): the agent's desktop notifications (issue 16) talk to
// the freedesktop notification service on the session bus through it. The few functions used are declared here, as
// libsystemd's ABI defines them, and found with dlsym in libsystemd.so.0, so the source builds with the Swift toolchain
// alone (no libsystemd-dev) and an agent on a machine without libsystemd runs, without notifications.
//
// Every call goes through baton_sd_bus_load() first having returned 0; before that the wrappers must not be called.
#ifndef BATON_CSYSTEMD_H
#define BATON_CSYSTEMD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <poll.h>

typedef struct sd_bus sd_bus;
typedef struct sd_bus_message sd_bus_message;
typedef struct sd_bus_slot sd_bus_slot;

// As <systemd/sd-bus.h> lays it out (public and stable since systemd 209).
typedef struct {
    const char *name;
    const char *message;
    int _need_free;
} sd_bus_error;

typedef int (*sd_bus_message_handler_t)(sd_bus_message *m, void *userdata, sd_bus_error *ret_error);

/// Loads libsystemd (the file named by `library`, or "libsystemd.so.0" when NULL) and finds every function below,
/// once per process; later calls return the first call's result. 0 when all were found; otherwise -1, with why in
/// `why` (NUL-terminated, cut to `why_size`).
int baton_sd_bus_load(const char *library, char *why, size_t why_size);

int baton_sd_bus_new(sd_bus **ret);
int baton_sd_bus_set_address(sd_bus *bus, const char *address);
int baton_sd_bus_set_bus_client(sd_bus *bus, int b);
int baton_sd_bus_start(sd_bus *bus);
int baton_sd_bus_flush(sd_bus *bus);
sd_bus *baton_sd_bus_flush_close_unref(sd_bus *bus);
int baton_sd_bus_is_open(sd_bus *bus);
int baton_sd_bus_get_fd(sd_bus *bus);
int baton_sd_bus_get_events(sd_bus *bus);
int baton_sd_bus_get_timeout(sd_bus *bus, uint64_t *timeout_usec);
int baton_sd_bus_process(sd_bus *bus, sd_bus_message **r);
int baton_sd_bus_call(sd_bus *bus, sd_bus_message *m, uint64_t usec, sd_bus_error *ret_error, sd_bus_message **reply);
int baton_sd_bus_send(sd_bus *bus, sd_bus_message *m, uint64_t *cookie);
int baton_sd_bus_match_signal(sd_bus *bus, sd_bus_slot **ret, const char *sender, const char *path,
                              const char *interface, const char *member, sd_bus_message_handler_t callback,
                              void *userdata);
int baton_sd_bus_add_match(sd_bus *bus, sd_bus_slot **slot, const char *match, sd_bus_message_handler_t callback,
                           void *userdata);
sd_bus_slot *baton_sd_bus_slot_unref(sd_bus_slot *slot);
int baton_sd_bus_message_new_method_call(sd_bus *bus, sd_bus_message **m, const char *destination, const char *path,
                                         const char *interface, const char *member);
sd_bus_message *baton_sd_bus_message_unref(sd_bus_message *m);
int baton_sd_bus_message_append_basic(sd_bus_message *m, char type, const void *p);
int baton_sd_bus_message_open_container(sd_bus_message *m, char type, const char *contents);
int baton_sd_bus_message_close_container(sd_bus_message *m);
int baton_sd_bus_message_read_basic(sd_bus_message *m, char type, void *p);
// Reading containers and variants (issue 27 item 1: a media player's properties, `a{sv}` with variants inside).
int baton_sd_bus_message_enter_container(sd_bus_message *m, char type, const char *contents);
int baton_sd_bus_message_exit_container(sd_bus_message *m);
int baton_sd_bus_message_peek_type(sd_bus_message *m, char *type, const char **contents);
int baton_sd_bus_message_skip(sd_bus_message *m, const char *types);
const char *baton_sd_bus_message_get_sender(sd_bus_message *m);
int baton_sd_bus_message_set_expect_reply(sd_bus_message *m, int b);
void baton_sd_bus_error_free(sd_bus_error *e);
int baton_sd_bus_error_has_name(const sd_bus_error *e, const char *name);

// The bridge between sd-bus messages and BatonDBus's DBusValue, and the agent's D-Bus interface (issue 28 item 1).
int baton_sd_bus_get_unique_name(sd_bus *bus, const char **unique);
/// One callback for every method call to `path` (no C vtable: the Swift side dispatches on the member).
int baton_sd_bus_add_object(sd_bus *bus, sd_bus_slot **slot, const char *path, sd_bus_message_handler_t callback,
                            void *userdata);
sd_bus_message *baton_sd_bus_message_ref(sd_bus_message *m);
int baton_sd_bus_message_get_type(sd_bus_message *m, uint8_t *type);
const char *baton_sd_bus_message_get_signature(sd_bus_message *m, int complete);
const char *baton_sd_bus_message_get_path(sd_bus_message *m);
const char *baton_sd_bus_message_get_interface(sd_bus_message *m);
const char *baton_sd_bus_message_get_member(sd_bus_message *m);
const char *baton_sd_bus_message_get_destination(sd_bus_message *m);
int baton_sd_bus_message_new_method_return(sd_bus_message *call, sd_bus_message **m);
int baton_sd_bus_reply_method_error(sd_bus_message *call, const sd_bus_error *e);
/// An array of a fixed-size type (`ay`) in one piece: `*ptr` points into the message, valid while it lives.
int baton_sd_bus_message_read_array(sd_bus_message *m, char type, const void **ptr, size_t *size);
int baton_sd_bus_message_append_array(sd_bus_message *m, char type, const void *ptr, size_t size);
int baton_sd_bus_message_rewind(sd_bus_message *m, int complete);
int baton_sd_bus_message_at_end(sd_bus_message *m, int complete);
/// Asks the bus for a well-known name (a blocking call to the daemon); flags as sd-bus's SD_BUS_NAME_* (0: fail if
/// another connection owns it, never queue).
int baton_sd_bus_request_name(sd_bus *bus, const char *name, uint64_t flags);
/// Reads an `h`: `*fd` is a duplicate of the message's descriptor, close-on-exec, the caller's to close (the message
/// closes its own with itself). As read_basic: 1 read, 0 at the end of the container, negative errno on failure.
int baton_sd_bus_message_read_fd(sd_bus_message *m, int *fd);
/// Calls a method without blocking (the agent's D-Bus interface calling an app, issue 28 item 1): `callback` gets the
/// reply, or an error message sd-bus makes when none comes within `usec` (0: sd-bus's default of 25 s). With a NULL
/// `slot` the call's slot is the bus's own, freed after the callback.
int baton_sd_bus_call_async(sd_bus *bus, sd_bus_slot **slot, sd_bus_message *m, sd_bus_message_handler_t callback,
                            void *userdata, uint64_t usec);
/// The error an error reply carries (its name and message), or NULL for any other message.
const sd_bus_error *baton_sd_bus_message_get_error(sd_bus_message *m);

#endif
