"""Handoff for any GLib app, through the Baton agent's D-Bus interface (docs/PROTOCOL.md §10 and §11).

A thin helper over Gio.DBusConnection: nothing beyond Debian's python3-gi. It follows the agent on the bus
(`org.baton.Agent`, appearing and vanishing), registers the app when it appears, and exports the app's own object
(`org.baton.App1` at `/org/baton/App1`) on the same connection, where the agent calls Save, Continue and the rest.

    agent = BatonAgent(connection, 'org.example.Recipes', delegate)
    agent.start()                     # registers whenever the agent is on the bus
    activity = agent.create_activity('org.example.recipes.viewing', {'title': 'Tarte Tatin', 'userInfo': {...}})
    agent.become_current(activity)
    agent.set_needs_save(activity)    # A6: the agent calls delegate.save(...) when the state is needed (A7)

Values are plain Python: str, int, float, bool, bytes, list, dict, and for the types D-Bus lacks (§10's tagged
`(sv)` structures) datetime, URL, uuid.UUID, set and None. `to_variant` and `from_variant` convert both ways.

The delegate is any object; each method is optional:

    registered(device_id, device_name)                       the agent took the app (and after it restarts)
    unregistered(reason)                                     the agent left the bus, or refused the app
    save(activity, deadline_ms) -> dict                      A7: the properties to apply (put the whole state in userInfo)
    was_continued(activity)                                  A8
    not_current(activity)                                    another app's activity is the device's current one
    will_continue(continuation, activity_type)               C5: a continuation begins
    continue_activity(continuation, activity) -> bool        C5, C7: activity is a dict with 'activityType', 'userInfo'...
    did_fail(continuation, activity_type, error_name, message)  C5, C8
    accept_stream(activity, stream, input_fd, output_fd) -> bool  F3: True takes the stream (the fds are then yours)
    stream_reset(stream, error_name, message)
"""

import datetime
import os
import sys
import uuid

from gi.repository import Gio, GLib

AGENT_NAME = 'org.baton.Agent'
AGENT_PATH = '/org/baton/Agent1'
AGENT_INTERFACE = 'org.baton.Agent1'
APP_PATH = '/org/baton/App1'
APP_INTERFACE = 'org.baton.App1'

# How long a call to the agent may take before it is given up (ms). Register and CreateActivity wait for their answer;
# the others are sent without blocking, so the agent can call the app back at any time.
CALL_TIMEOUT_MS = 10000

# Property lists count dates from 2001-01-01T00:00:00Z (§10).
_EPOCH_2001 = datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc)
_INT64_MAX = 2**63 - 1

# org.baton.App1 (§11): each method, its arguments in and out (type, name).
APP_METHODS = {
    'Save': ('t activity, t deadline_ms', 'a{sv} properties'),
    'WasContinued': ('t activity', ''),
    'NotCurrent': ('t activity', ''),
    'WillContinue': ('t continuation, s activity_type', ''),
    'Continue': ('t continuation, a{sv} activity', 'b handled'),
    'DidFail': ('t continuation, s activity_type, s error_name, s message', ''),
    'AcceptStream': ('t activity, t stream, h input, h output', ''),
    'StreamReset': ('t stream, s error_name, s message', ''),
}


def _introspection(interface, methods):
    def arguments(direction, text):
        return ''.join(f'<arg direction="{direction}" type="{argument.split()[0]}" name="{argument.split()[1]}"/>'
                       for argument in text.split(', ') if argument)
    body = ''.join(f'<method name="{name}">{arguments("in", ins)}{arguments("out", outs)}</method>'
                   for name, (ins, outs) in methods.items())
    return f'<node><interface name="{interface}">{body}</interface></node>'


class URL(str):
    """A URL in a userInfo: travels as ('url', <s>), and comes back a URL, not a string (§10)."""


def _tagged(tag, variant):
    return GLib.Variant('(sv)', (tag, variant))


def to_variant(value):
    """The D-Bus value of a Python value, by §10's table (the variant's content, not wrapped in a `v`)."""
    if isinstance(value, GLib.Variant):
        return value
    if value is None:
        return _tagged('null', GLib.Variant('s', ''))
    if isinstance(value, bool):  # before int: a bool is an int in Python
        return GLib.Variant('b', value)
    if isinstance(value, int):
        return GLib.Variant('t', value) if value > _INT64_MAX else GLib.Variant('x', value)
    if isinstance(value, float):
        return GLib.Variant('d', value)
    if isinstance(value, URL):  # before str: a URL is a str
        return _tagged('url', GLib.Variant('s', str(value)))
    if isinstance(value, str):
        return GLib.Variant('s', value)
    if isinstance(value, (bytes, bytearray)):
        return GLib.Variant('ay', bytes(value))
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            raise ValueError('a date in a userInfo needs a time zone (datetime.now(timezone.utc))')
        return _tagged('date', GLib.Variant('d', (value - _EPOCH_2001).total_seconds()))
    if isinstance(value, uuid.UUID):
        return _tagged('uuid', GLib.Variant('s', str(value)))
    if isinstance(value, (set, frozenset)):
        return _tagged('set', GLib.Variant('av', [to_variant(v) for v in value]))
    if isinstance(value, (list, tuple)):
        return GLib.Variant('av', [to_variant(v) for v in value])
    if isinstance(value, dict):
        entries = {}
        for key in sorted(value):
            if not isinstance(key, str):
                raise ValueError(f'a userInfo key must be a string, not {key!r}')
            entries[key] = to_variant(value[key])
        return GLib.Variant('a{sv}', entries)
    raise ValueError(f'{type(value).__name__} has no property-list type (see PROTOCOL.md §10)')


def to_properties(properties):
    """An `a{sv}` of activity properties from a dict of Python values."""
    return GLib.Variant('a{sv}', {key: to_variant(value) for key, value in properties.items()})


def from_variant(variant):
    """The Python value of a D-Bus value, by §10's table (tagged structures become dates, URLs, UUIDs, sets, None)."""
    type_string = variant.get_type_string()
    if type_string == 'v':
        return from_variant(variant.get_variant())
    if type_string == '(sv)':
        tag, inner = variant.get_child_value(0).get_string(), variant.get_child_value(1).get_variant()
        if tag == 'date':
            return _EPOCH_2001 + datetime.timedelta(seconds=inner.get_double())
        if tag == 'url':
            return URL(inner.get_string())
        if tag == 'uuid':
            return uuid.UUID(inner.get_string())
        if tag == 'set':
            return {from_variant(inner.get_child_value(i)) for i in range(inner.n_children())}
        if tag == 'null':
            return None
    if type_string == 'ay':
        return bytes(variant.get_data_as_bytes().get_data())
    if type_string.startswith('a{'):
        return {variant.get_child_value(i).get_child_value(0).unpack(): from_variant(variant.get_child_value(i).get_child_value(1))
                for i in range(variant.n_children())}
    if type_string.startswith('a') or type_string.startswith('('):
        return [from_variant(variant.get_child_value(i)) for i in range(variant.n_children())]
    return variant.unpack()


class BatonAgent:
    """The app's side of the agent's D-Bus interface, on one bus connection (the app's own, e.g. its GApplication's)."""

    def __init__(self, connection, app_id, delegate, log=None):
        self.connection = connection
        self.app_id = app_id
        self.delegate = delegate
        self.log = log or (lambda message: print(f'baton_dbus: {message}', file=sys.stderr, flush=True))
        self.device_id = None
        self.device_name = None
        self._watch = 0
        self._registration = 0

    # The app's object and the agent's name ---------------------------------------------------------------------------

    def start(self):
        """Exports /org/baton/App1 and registers with the agent whenever it is on the bus (now, or when it starts)."""
        node = Gio.DBusNodeInfo.new_for_xml(_introspection(APP_INTERFACE, APP_METHODS))
        self._registration = self.connection.register_object(APP_PATH, node.interfaces[0], self._method_call, None, None)
        self._watch = Gio.bus_watch_name_on_connection(
            self.connection, AGENT_NAME, Gio.BusNameWatcherFlags.NONE, self._agent_appeared, self._agent_vanished)

    def stop(self):
        if self._watch:
            Gio.bus_unwatch_name(self._watch)
            self._watch = 0
        if self._registration:
            self.connection.unregister_object(self._registration)
            self._registration = 0

    @property
    def registered(self):
        return self.device_id is not None

    def _agent_appeared(self, connection, name, owner):
        try:
            reply = self._call_sync('Register', GLib.Variant('(sa{sv})', (self.app_id, {})))
        except GLib.Error as error:
            self.log(f'the agent refused {self.app_id}: {error.message}')
            self._notify('unregistered', error.message)
            return
        self.device_id, self.device_name = reply.unpack()
        self._notify('registered', self.device_id, self.device_name)

    def _agent_vanished(self, connection, name):
        if self.registered:
            self.device_id = self.device_name = None
            self._notify('unregistered', 'the agent left the bus')

    def _notify(self, method, *arguments):
        handler = getattr(self.delegate, method, None)
        return handler(*arguments) if handler else None

    # Calls to the agent ----------------------------------------------------------------------------------------------

    def _call_sync(self, method, parameters, reply_type=None):
        return self.connection.call_sync(
            AGENT_NAME, AGENT_PATH, AGENT_INTERFACE, method, parameters,
            GLib.VariantType.new(reply_type) if reply_type else None, Gio.DBusCallFlags.NONE, CALL_TIMEOUT_MS, None)

    def _send(self, method, parameters):
        """Sends a call without waiting (the agent may call the app back before it answers); logs a refusal."""
        def done(connection, result):
            try:
                connection.call_finish(result)
            except GLib.Error as error:
                self.log(f'{method} refused: {error.message}')
        self.connection.call(AGENT_NAME, AGENT_PATH, AGENT_INTERFACE, method, parameters, None,
                             Gio.DBusCallFlags.NONE, CALL_TIMEOUT_MS, None, done)

    def create_activity(self, activity_type, properties=None):
        """A new activity (A1) with the properties given (title, userInfo, webpageURL...); returns its number."""
        parameters = GLib.Variant.new_tuple(GLib.Variant('s', activity_type), to_properties(properties or {}))
        return self._call_sync('CreateActivity', parameters, '(t)').unpack()[0]

    def update_activity(self, activity, properties):
        self._send('UpdateActivity', GLib.Variant.new_tuple(GLib.Variant('t', activity), to_properties(properties)))

    def become_current(self, activity):
        self._send('BecomeCurrent', GLib.Variant('(t)', (activity,)))

    def resign_current(self, activity):
        self._send('ResignCurrent', GLib.Variant('(t)', (activity,)))

    def invalidate(self, activity):
        self._send('Invalidate', GLib.Variant('(t)', (activity,)))

    def set_needs_save(self, activity):
        """A6: cheap, and coalesced by the agent; it calls the delegate's save when the state is needed (A7)."""
        self._send('SetNeedsSave', GLib.Variant('(t)', (activity,)))

    # Calls from the agent --------------------------------------------------------------------------------------------

    def _method_call(self, connection, sender, path, interface, method, parameters, invocation):
        try:
            if method == 'Save':
                activity, deadline_ms = parameters.unpack()
                properties = self._notify('save', activity, deadline_ms) or {}
                invocation.return_value(GLib.Variant.new_tuple(to_properties(properties)))
            elif method == 'Continue':
                continuation = parameters.get_child_value(0).get_uint64()
                activity = from_variant(parameters.get_child_value(1))
                handled = self._notify('continue_activity', continuation, activity)
                invocation.return_value(GLib.Variant('(b)', (bool(handled),)))
            elif method == 'AcceptStream':
                self._accept_stream(parameters, invocation)
            elif method in ('WasContinued', 'NotCurrent', 'WillContinue', 'DidFail', 'StreamReset'):
                names = {'WasContinued': 'was_continued', 'NotCurrent': 'not_current', 'WillContinue': 'will_continue',
                         'DidFail': 'did_fail', 'StreamReset': 'stream_reset'}
                self._notify(names[method], *parameters.unpack())
                invocation.return_value(None)
            else:
                invocation.return_dbus_error('org.freedesktop.DBus.Error.UnknownMethod', f'no method {method}')
        except Exception as error:  # the app's own bug: the agent gets an error reply, not silence
            self.log(f'{method} failed: {error!r}')
            invocation.return_dbus_error('org.baton.Error.AppFailed', f'{method} failed in the app: {error}')

    def _accept_stream(self, parameters, invocation):
        activity, stream, input_index, output_index = parameters.unpack()
        fds = invocation.get_message().get_unix_fd_list()
        input_fd = fds.get(input_index) if fds else -1  # get() duplicates: the app owns these
        output_fd = fds.get(output_index) if fds else -1
        if self._notify('accept_stream', activity, stream, input_fd, output_fd):
            invocation.return_value(None)
            return
        for fd in (input_fd, output_fd):
            if fd >= 0:
                os.close(fd)
        invocation.return_dbus_error('org.baton.Error.NoStreams', 'this app takes no continuation streams')
