#!/usr/bin/python3
"""A stand-in desktop notification server for BatonCLITests (issue 16 part 2).

Owns org.freedesktop.Notifications on the bus at ADDRESS, records every Notify and CloseNotification call as a JSON
line in LOG (with the time it came, seconds since 1970), and answers as the freedesktop specification says: Notify
returns the id (replaces_id when given, else a new one), CloseNotification emits NotificationClosed(id, 3).

Commands on standard input, one a line:
    invoke ID KEY     emit ActionInvoked(ID, KEY), as a click on a notification's button does
    closed ID REASON  emit NotificationClosed(ID, REASON), as a dismissal does
Prints "ready" once it owns the name. Needs Debian's python3-dbus and python3-gi: run it with /usr/bin/python3.

Usage: notification-server.py ADDRESS LOG
"""

import json
import sys
import time

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

INTERFACE = "org.freedesktop.Notifications"


class Server(dbus.service.Object):
    def __init__(self, bus, log):
        super().__init__(bus, "/org/freedesktop/Notifications")
        self.log = log
        self.next_id = 1

    def record(self, **fields):
        fields["time"] = time.time()
        self.log.write(json.dumps(fields) + "\n")
        self.log.flush()

    @dbus.service.method(INTERFACE, in_signature="susssasa{sv}i", out_signature="u")
    def Notify(self, app_name, replaces_id, app_icon, summary, body, actions, hints, expire_timeout):
        notification = int(replaces_id)
        if notification == 0:
            notification = self.next_id
            self.next_id += 1
        self.record(
            call="Notify",
            id=notification,
            app_name=str(app_name),
            replaces_id=int(replaces_id),
            app_icon=str(app_icon),
            summary=str(summary),
            body=str(body),
            actions=[str(action) for action in actions],
            expire_timeout=int(expire_timeout),
        )
        return dbus.UInt32(notification)

    @dbus.service.method(INTERFACE, in_signature="u", out_signature="")
    def CloseNotification(self, notification):
        self.record(call="CloseNotification", id=int(notification))
        self.NotificationClosed(notification, 3)

    @dbus.service.method(INTERFACE, in_signature="", out_signature="as")
    def GetCapabilities(self):
        return ["actions", "body", "body-markup"]

    @dbus.service.method(INTERFACE, in_signature="", out_signature="ssss")
    def GetServerInformation(self):
        return ("baton-test-notifications", "baton", "1", "1.2")

    @dbus.service.signal(INTERFACE, signature="uu")
    def NotificationClosed(self, notification, reason):
        pass

    @dbus.service.signal(INTERFACE, signature="us")
    def ActionInvoked(self, notification, key):
        pass


def main():
    address, log_path = sys.argv[1], sys.argv[2]
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(address)
    log = open(log_path, "a", encoding="utf-8")
    server = Server(bus, log)
    name = dbus.service.BusName(INTERFACE, bus, do_not_queue=True)
    loop = GLib.MainLoop()

    def command(source, condition):
        line = sys.stdin.readline()
        if not line:
            loop.quit()
            return False
        words = line.split()
        if len(words) == 3 and words[0] == "invoke":
            server.ActionInvoked(dbus.UInt32(int(words[1])), words[2])
        elif len(words) == 3 and words[0] == "closed":
            server.NotificationClosed(dbus.UInt32(int(words[1])), dbus.UInt32(int(words[2])))
        print("done " + line.strip(), flush=True)
        return True

    GLib.io_add_watch(sys.stdin.fileno(), GLib.IO_IN | GLib.IO_HUP, command)
    bus.call_on_disconnection(lambda connection: loop.quit())
    print("ready", name.get_name(), flush=True)
    loop.run()


if __name__ == "__main__":
    main()
