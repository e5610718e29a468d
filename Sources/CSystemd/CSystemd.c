// libsystemd's sd-bus, found at run time: see include/CSystemd.h for why.
#include "CSystemd.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>

#define BATON_SD_BUS_FUNCTIONS(X)                                                                                     \
    X(sd_bus_new, int, (sd_bus **))                                                                                    \
    X(sd_bus_set_address, int, (sd_bus *, const char *))                                                              \
    X(sd_bus_set_bus_client, int, (sd_bus *, int))                                                                    \
    X(sd_bus_start, int, (sd_bus *))                                                                                   \
    X(sd_bus_flush, int, (sd_bus *))                                                                                   \
    X(sd_bus_flush_close_unref, sd_bus *, (sd_bus *))                                                                  \
    X(sd_bus_is_open, int, (sd_bus *))                                                                                 \
    X(sd_bus_get_fd, int, (sd_bus *))                                                                                  \
    X(sd_bus_get_events, int, (sd_bus *))                                                                              \
    X(sd_bus_get_timeout, int, (sd_bus *, uint64_t *))                                                                 \
    X(sd_bus_process, int, (sd_bus *, sd_bus_message **))                                                             \
    X(sd_bus_call, int, (sd_bus *, sd_bus_message *, uint64_t, sd_bus_error *, sd_bus_message **))                   \
    X(sd_bus_send, int, (sd_bus *, sd_bus_message *, uint64_t *))                                                     \
    X(sd_bus_match_signal, int,                                                                                        \
      (sd_bus *, sd_bus_slot **, const char *, const char *, const char *, const char *, sd_bus_message_handler_t,   \
       void *))                                                                                                        \
    X(sd_bus_add_match, int, (sd_bus *, sd_bus_slot **, const char *, sd_bus_message_handler_t, void *))              \
    X(sd_bus_slot_unref, sd_bus_slot *, (sd_bus_slot *))                                                               \
    X(sd_bus_message_new_method_call, int,                                                                             \
      (sd_bus *, sd_bus_message **, const char *, const char *, const char *, const char *))                         \
    X(sd_bus_message_unref, sd_bus_message *, (sd_bus_message *))                                                      \
    X(sd_bus_message_append_basic, int, (sd_bus_message *, char, const void *))                                       \
    X(sd_bus_message_open_container, int, (sd_bus_message *, char, const char *))                                     \
    X(sd_bus_message_close_container, int, (sd_bus_message *))                                                         \
    X(sd_bus_message_read_basic, int, (sd_bus_message *, char, void *))                                               \
    X(sd_bus_message_enter_container, int, (sd_bus_message *, char, const char *))                                    \
    X(sd_bus_message_exit_container, int, (sd_bus_message *))                                                          \
    X(sd_bus_message_peek_type, int, (sd_bus_message *, char *, const char **))                                       \
    X(sd_bus_message_skip, int, (sd_bus_message *, const char *))                                                      \
    X(sd_bus_message_get_sender, const char *, (sd_bus_message *))                                                     \
    X(sd_bus_message_set_expect_reply, int, (sd_bus_message *, int))                                                  \
    X(sd_bus_error_free, void, (sd_bus_error *))                                                                       \
    X(sd_bus_error_has_name, int, (const sd_bus_error *, const char *))                                                \
    X(sd_bus_get_unique_name, int, (sd_bus *, const char **))                                                          \
    X(sd_bus_add_object, int, (sd_bus *, sd_bus_slot **, const char *, sd_bus_message_handler_t, void *))             \
    X(sd_bus_message_ref, sd_bus_message *, (sd_bus_message *))                                                        \
    X(sd_bus_message_get_type, int, (sd_bus_message *, uint8_t *))                                                     \
    X(sd_bus_message_get_signature, const char *, (sd_bus_message *, int))                                            \
    X(sd_bus_message_get_path, const char *, (sd_bus_message *))                                                       \
    X(sd_bus_message_get_interface, const char *, (sd_bus_message *))                                                  \
    X(sd_bus_message_get_member, const char *, (sd_bus_message *))                                                     \
    X(sd_bus_message_get_destination, const char *, (sd_bus_message *))                                                \
    X(sd_bus_message_new_method_return, int, (sd_bus_message *, sd_bus_message **))                                   \
    X(sd_bus_reply_method_error, int, (sd_bus_message *, const sd_bus_error *))                                       \
    X(sd_bus_message_read_array, int, (sd_bus_message *, char, const void **, size_t *))                              \
    X(sd_bus_message_append_array, int, (sd_bus_message *, char, const void *, size_t))                               \
    X(sd_bus_message_rewind, int, (sd_bus_message *, int))                                                             \
    X(sd_bus_message_at_end, int, (sd_bus_message *, int))                                                             \
    X(sd_bus_request_name, int, (sd_bus *, const char *, uint64_t))                                               \
    X(sd_bus_call_async, int, (sd_bus *, sd_bus_slot **, sd_bus_message *, sd_bus_message_handler_t, void *, uint64_t)) \
    X(sd_bus_message_get_error, const sd_bus_error *, (sd_bus_message *))

#define BATON_DECLARE_POINTER(name, result, parameters) static result(*baton_##name##_pointer) parameters;
BATON_SD_BUS_FUNCTIONS(BATON_DECLARE_POINTER)

static pthread_mutex_t baton_load_lock = PTHREAD_MUTEX_INITIALIZER;
static int baton_load_state;  // 0 not tried, 1 loaded, -1 failed
static char baton_load_why[512];

static int baton_load_locked(const char *library) {
    const char *file = library ? library : "libsystemd.so.0";
    // RTLD_LOCAL: nothing else in the process binds to these symbols through us. Never closed: the functions are used
    // for the life of the process.
    void *handle = dlopen(file, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        const char *error = dlerror();
        snprintf(baton_load_why, sizeof baton_load_why, "%s", error ? error : "cannot load it");
        return -1;
    }
#define BATON_FIND(name, result, parameters)                                                                           \
    *(void **)(&baton_##name##_pointer) = dlsym(handle, #name);                                                       \
    if (!baton_##name##_pointer) {                                                                                     \
        snprintf(baton_load_why, sizeof baton_load_why, "%s has no %s (libsystemd before 221?)", file, #name);          \
        return -1;                                                                                                     \
    }
    BATON_SD_BUS_FUNCTIONS(BATON_FIND)
    return 1;
}

int baton_sd_bus_load(const char *library, char *why, size_t why_size) {
    pthread_mutex_lock(&baton_load_lock);
    if (baton_load_state == 0) baton_load_state = baton_load_locked(library);
    int state = baton_load_state;
    if (state < 0 && why && why_size > 0) snprintf(why, why_size, "%s", baton_load_why);
    pthread_mutex_unlock(&baton_load_lock);
    return state > 0 ? 0 : -1;
}

int baton_sd_bus_new(sd_bus **ret) { return baton_sd_bus_new_pointer(ret); }
int baton_sd_bus_set_address(sd_bus *bus, const char *address) {
    return baton_sd_bus_set_address_pointer(bus, address);
}
int baton_sd_bus_set_bus_client(sd_bus *bus, int b) { return baton_sd_bus_set_bus_client_pointer(bus, b); }
int baton_sd_bus_start(sd_bus *bus) { return baton_sd_bus_start_pointer(bus); }
int baton_sd_bus_flush(sd_bus *bus) { return baton_sd_bus_flush_pointer(bus); }
sd_bus *baton_sd_bus_flush_close_unref(sd_bus *bus) { return baton_sd_bus_flush_close_unref_pointer(bus); }
int baton_sd_bus_is_open(sd_bus *bus) { return baton_sd_bus_is_open_pointer(bus); }
int baton_sd_bus_get_fd(sd_bus *bus) { return baton_sd_bus_get_fd_pointer(bus); }
int baton_sd_bus_get_events(sd_bus *bus) { return baton_sd_bus_get_events_pointer(bus); }
int baton_sd_bus_get_timeout(sd_bus *bus, uint64_t *timeout_usec) {
    return baton_sd_bus_get_timeout_pointer(bus, timeout_usec);
}
int baton_sd_bus_process(sd_bus *bus, sd_bus_message **r) { return baton_sd_bus_process_pointer(bus, r); }
int baton_sd_bus_call(sd_bus *bus, sd_bus_message *m, uint64_t usec, sd_bus_error *ret_error, sd_bus_message **reply) {
    return baton_sd_bus_call_pointer(bus, m, usec, ret_error, reply);
}
int baton_sd_bus_send(sd_bus *bus, sd_bus_message *m, uint64_t *cookie) {
    return baton_sd_bus_send_pointer(bus, m, cookie);
}
int baton_sd_bus_match_signal(sd_bus *bus, sd_bus_slot **ret, const char *sender, const char *path,
                              const char *interface, const char *member, sd_bus_message_handler_t callback,
                              void *userdata) {
    return baton_sd_bus_match_signal_pointer(bus, ret, sender, path, interface, member, callback, userdata);
}
int baton_sd_bus_add_match(sd_bus *bus, sd_bus_slot **slot, const char *match, sd_bus_message_handler_t callback,
                           void *userdata) {
    return baton_sd_bus_add_match_pointer(bus, slot, match, callback, userdata);
}
sd_bus_slot *baton_sd_bus_slot_unref(sd_bus_slot *slot) { return baton_sd_bus_slot_unref_pointer(slot); }
int baton_sd_bus_message_new_method_call(sd_bus *bus, sd_bus_message **m, const char *destination, const char *path,
                                         const char *interface, const char *member) {
    return baton_sd_bus_message_new_method_call_pointer(bus, m, destination, path, interface, member);
}
sd_bus_message *baton_sd_bus_message_unref(sd_bus_message *m) { return baton_sd_bus_message_unref_pointer(m); }
int baton_sd_bus_message_append_basic(sd_bus_message *m, char type, const void *p) {
    return baton_sd_bus_message_append_basic_pointer(m, type, p);
}
int baton_sd_bus_message_open_container(sd_bus_message *m, char type, const char *contents) {
    return baton_sd_bus_message_open_container_pointer(m, type, contents);
}
int baton_sd_bus_message_close_container(sd_bus_message *m) {
    return baton_sd_bus_message_close_container_pointer(m);
}
int baton_sd_bus_message_read_basic(sd_bus_message *m, char type, void *p) {
    return baton_sd_bus_message_read_basic_pointer(m, type, p);
}
int baton_sd_bus_message_enter_container(sd_bus_message *m, char type, const char *contents) {
    return baton_sd_bus_message_enter_container_pointer(m, type, contents);
}
int baton_sd_bus_message_exit_container(sd_bus_message *m) { return baton_sd_bus_message_exit_container_pointer(m); }
int baton_sd_bus_message_peek_type(sd_bus_message *m, char *type, const char **contents) {
    return baton_sd_bus_message_peek_type_pointer(m, type, contents);
}
int baton_sd_bus_message_skip(sd_bus_message *m, const char *types) { return baton_sd_bus_message_skip_pointer(m, types); }
const char *baton_sd_bus_message_get_sender(sd_bus_message *m) { return baton_sd_bus_message_get_sender_pointer(m); }
int baton_sd_bus_message_set_expect_reply(sd_bus_message *m, int b) {
    return baton_sd_bus_message_set_expect_reply_pointer(m, b);
}
void baton_sd_bus_error_free(sd_bus_error *e) { baton_sd_bus_error_free_pointer(e); }
int baton_sd_bus_error_has_name(const sd_bus_error *e, const char *name) {
    return baton_sd_bus_error_has_name_pointer(e, name);
}

// Issue 28 item 1: what the bridge between sd-bus messages and BatonDBus's DBusValue needs.
int baton_sd_bus_get_unique_name(sd_bus *bus, const char **unique) { return baton_sd_bus_get_unique_name_pointer(bus, unique); }
int baton_sd_bus_add_object(sd_bus *bus, sd_bus_slot **slot, const char *path, sd_bus_message_handler_t callback,
                            void *userdata) {
    return baton_sd_bus_add_object_pointer(bus, slot, path, callback, userdata);
}
sd_bus_message *baton_sd_bus_message_ref(sd_bus_message *m) { return baton_sd_bus_message_ref_pointer(m); }
int baton_sd_bus_message_get_type(sd_bus_message *m, uint8_t *type) { return baton_sd_bus_message_get_type_pointer(m, type); }
const char *baton_sd_bus_message_get_signature(sd_bus_message *m, int complete) {
    return baton_sd_bus_message_get_signature_pointer(m, complete);
}
const char *baton_sd_bus_message_get_path(sd_bus_message *m) { return baton_sd_bus_message_get_path_pointer(m); }
const char *baton_sd_bus_message_get_interface(sd_bus_message *m) { return baton_sd_bus_message_get_interface_pointer(m); }
const char *baton_sd_bus_message_get_member(sd_bus_message *m) { return baton_sd_bus_message_get_member_pointer(m); }
const char *baton_sd_bus_message_get_destination(sd_bus_message *m) {
    return baton_sd_bus_message_get_destination_pointer(m);
}
int baton_sd_bus_message_new_method_return(sd_bus_message *call, sd_bus_message **m) {
    return baton_sd_bus_message_new_method_return_pointer(call, m);
}
int baton_sd_bus_reply_method_error(sd_bus_message *call, const sd_bus_error *e) {
    return baton_sd_bus_reply_method_error_pointer(call, e);
}
int baton_sd_bus_message_read_array(sd_bus_message *m, char type, const void **ptr, size_t *size) {
    return baton_sd_bus_message_read_array_pointer(m, type, ptr, size);
}
int baton_sd_bus_message_append_array(sd_bus_message *m, char type, const void *ptr, size_t size) {
    return baton_sd_bus_message_append_array_pointer(m, type, ptr, size);
}
int baton_sd_bus_message_rewind(sd_bus_message *m, int complete) { return baton_sd_bus_message_rewind_pointer(m, complete); }
int baton_sd_bus_message_at_end(sd_bus_message *m, int complete) { return baton_sd_bus_message_at_end_pointer(m, complete); }

int baton_sd_bus_message_read_fd(sd_bus_message *m, int *fd) {
    int borrowed = -1;
    int result = baton_sd_bus_message_read_basic_pointer(m, 'h', &borrowed);
    if (result <= 0) return result;
    // The message owns `borrowed` and closes it with the message: a copy of our own, close-on-exec from the start so
    // no program the agent starts meanwhile inherits it, above the standard streams.
    int copy = fcntl(borrowed, F_DUPFD_CLOEXEC, 3);
    if (copy < 0) return -errno;
    *fd = copy;
    return result;
}
int baton_sd_bus_request_name(sd_bus *bus, const char *name, uint64_t flags) {
    return baton_sd_bus_request_name_pointer(bus, name, flags);
}
int baton_sd_bus_call_async(sd_bus *bus, sd_bus_slot **slot, sd_bus_message *m, sd_bus_message_handler_t callback,
                            void *userdata, uint64_t usec) {
    return baton_sd_bus_call_async_pointer(bus, slot, m, callback, userdata, usec);
}
const sd_bus_error *baton_sd_bus_message_get_error(sd_bus_message *m) { return baton_sd_bus_message_get_error_pointer(m); }
