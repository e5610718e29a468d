#!/usr/bin/python3
"""A Python app of ShopSnap's team that continues ShopSnap's lists over the agent's D-Bus interface, and offers its own
in ShopSnap's userInfo format (DBusAppsNamespaceTests: Swift and Python continue each other's activities, D1).

    shopsnap-lists-dbus.py BATON_DBUS_FOLDER EVENTS_FILE

BATON_DBUS_FOLDER holds baton_dbus.py (Examples/Recipes). What happens is written to EVENTS_FILE, a JSON object a line:
registered, continued (the activity the agent delivered), offered (its own list: the one it was given and Butter),
was_continued (A8). It ends by itself after 40 s.
"""

import json
import sys

sys.path.insert(0, sys.argv[1])
import baton_dbus  # noqa: E402
from gi.repository import Gio, GLib  # noqa: E402

APP_ID = 'org.example.Lists'
EVENTS = sys.argv[2]
ITEMS_KEY = 'shopsnap.items.key'
VERSION_KEY = 'shopsnap.version.key'


def report(event, **values):
    with open(EVENTS, 'a', encoding='utf-8') as file:
        file.write(json.dumps(dict(event=event, **values)) + '\n')


class Lists:
    def __init__(self, connection):
        self.agent = baton_dbus.BatonAgent(connection, APP_ID, self)
        self.items = []

    def registered(self, device_id, device_name):
        report('registered', device=device_name)

    def unregistered(self, reason):
        report('unregistered', reason=reason)

    def properties(self):
        return {'title': f'Shopping list ({len(self.items)} items)',
                'userInfo': {ITEMS_KEY: self.items, VERSION_KEY: '1.0'}}

    def continue_activity(self, continuation, activity):
        user_info = activity.get('userInfo') or {}
        report('continued', activityType=activity.get('activityType'), userInfo={k: v for k, v in user_info.items() if isinstance(v, (str, list))})
        # The person goes on with the list here: one more item, offered back in ShopSnap's format.
        self.items = [item for item in user_info.get(ITEMS_KEY, []) if isinstance(item, str)] + ['Butter']
        GLib.idle_add(self.offer)
        return True

    def offer(self):
        activity = self.agent.create_activity('com.razeware.shopsnap.view', self.properties())
        self.agent.become_current(activity)
        report('offered', items=self.items)
        return False

    def save(self, activity, deadline_ms):
        return self.properties()

    def was_continued(self, activity):
        report('was_continued')


def main():
    connection = Gio.bus_get_sync(Gio.BusType.SESSION, None)
    lists = Lists(connection)
    lists.agent.start()
    loop = GLib.MainLoop()
    GLib.timeout_add_seconds(40, loop.quit)
    loop.run()


if __name__ == '__main__':
    main()
