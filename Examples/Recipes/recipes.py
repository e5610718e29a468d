#!/usr/bin/python3
"""Recipes: a GTK 4 recipe viewer that hands off through the Baton agent's D-Bus interface (issue 28 item 5).

The recipe shown and how far it is scrolled are the app's current activity (`org.baton.recipes.viewing`, titled by
the recipe's name); another device that continues it shows the same recipe at the same place. Written against
docs/PROTOCOL.md §11 only, through baton_dbus.py beside it.

    recipes.py [--recipe ID] [--scroll FRACTION] [--then-scroll FRACTION] [--print-state] [--state-file FILE]
               [--quit-after SECONDS]

A GApplication (`org.baton.Recipes`): the agent launches it by D-Bus activation (`--gapplication-service`). For
tests, --then-scroll moves the view once it is shown as a person would, --print-state prints a JSON line on standard output at each thing a person would notice (the recipe shown,
saved, continued), --state-file (or $RECIPES_STATE_FILE, for an app the bus starts) appends the same lines to a file.
"""

import json
import os
import sys

import gi

# No __pycache__ beside the script: installed, its folder holds only what install.sh put there (and uninstall removes).
sys.dont_write_bytecode = True
gi.require_version('Gdk', '4.0')
gi.require_version('Gtk', '4.0')
from gi.repository import Gdk, Gio, GLib, Gtk  # noqa: E402

import baton_dbus  # noqa: E402

APP_ID = 'org.baton.Recipes'
ACTIVITY_TYPE = 'org.baton.recipes.viewing'
# H1: the version of what this app puts in userInfo; a continuation from a newer version is refused, not misread.
STATE_VERSION = 1
HERE = os.path.dirname(os.path.abspath(__file__))


def load_recipes():
    with open(os.path.join(HERE, 'recipes.json'), encoding='utf-8') as file:
        return json.load(file)['recipes']


def recipe_text(recipe):
    lines = [recipe['name'], '', f"Serves {recipe['serves']}", '', 'Ingredients', '']
    lines += [f'  • {item}' for item in recipe['ingredients']]
    lines += ['', 'Method', '']
    for number, step in enumerate(recipe['steps'], start=1):
        lines += [f'  {number}. {step}', '']
    return '\n'.join(lines)


class RecipesApp(Gtk.Application):
    def __init__(self):
        super().__init__(application_id=APP_ID, flags=Gio.ApplicationFlags.FLAGS_NONE)
        self.recipes = load_recipes()
        self.by_id = {recipe['id']: recipe for recipe in self.recipes}
        self.current = self.recipes[0]
        self.window = None
        self.agent = None
        self.activity = None       # the activity's number at the agent, once registered and shown
        self.dirty = False         # SetNeedsSave sent since the last Save (A6: one call per change of state is enough)
        self.pending_scroll = None  # a fraction to scroll to while the text is laid out
        self.settle = 0             # the timer that ends that
        self.print_state = False
        self.state_file = os.environ.get('RECIPES_STATE_FILE')
        self.then_scroll = None
        self.add_main_option('recipe', 0, GLib.OptionFlags.NONE, GLib.OptionArg.STRING, 'The recipe to show first', 'ID')
        self.add_main_option('scroll', 0, GLib.OptionFlags.NONE, GLib.OptionArg.DOUBLE, 'Scroll to this fraction (0 to 1)', 'F')
        self.add_main_option('then-scroll', 0, GLib.OptionFlags.NONE, GLib.OptionArg.DOUBLE, 'Once shown, scroll to F as a reader would', 'F')
        self.add_main_option('print-state', 0, GLib.OptionFlags.NONE, GLib.OptionArg.NONE, 'Print a JSON line at each change', None)
        self.add_main_option('state-file', 0, GLib.OptionFlags.NONE, GLib.OptionArg.STRING, 'Append those lines to FILE', 'FILE')
        self.add_main_option('quit-after', 0, GLib.OptionFlags.NONE, GLib.OptionArg.DOUBLE, 'Quit after SECONDS', 'SECONDS')
        self.connect('handle-local-options', self.on_options)

    # Options and state lines -----------------------------------------------------------------------------------------

    def on_options(self, app, options):
        options = options.end().unpack()
        if 'recipe' in options:
            if options['recipe'] not in self.by_id:
                print(f"recipes: no recipe {options['recipe']!r} (there are: {', '.join(self.by_id)})", file=sys.stderr)
                return 2
            self.current = self.by_id[options['recipe']]
        if 'scroll' in options:
            self.pending_scroll = min(max(options['scroll'], 0.0), 1.0)
        self.then_scroll = options.get('then-scroll')
        self.print_state = 'print-state' in options
        if 'state-file' in options:
            self.state_file = options['state-file']
        if 'quit-after' in options:
            GLib.timeout_add(int(options['quit-after'] * 1000), self.quit)
        return -1  # go on and run

    def report(self, event, **fields):
        line = json.dumps({'event': event, **fields}, ensure_ascii=False)
        if self.print_state:
            print(line, flush=True)
        if self.state_file:
            with open(self.state_file, 'a', encoding='utf-8') as file:
                file.write(line + '\n')

    # The window ------------------------------------------------------------------------------------------------------

    def do_startup(self):
        Gtk.Application.do_startup(self)
        connection = self.get_dbus_connection()
        if connection is None:
            self.report('standalone', reason='no session bus: no handoff')
            return
        self.agent = baton_dbus.BatonAgent(connection, APP_ID, self)
        self.agent.start()

    def do_activate(self):
        self.show_window()

    def show_window(self):
        if self.window is None:
            self.build_window()
        self.window.present()

    def build_window(self):
        self.window = Gtk.ApplicationWindow(application=self, default_width=720, default_height=440)
        self.window.set_titlebar(Gtk.HeaderBar())  # drawn by GTK: the title shows even with no window manager
        self.list = Gtk.ListBox(selection_mode=Gtk.SelectionMode.SINGLE)
        for recipe in self.recipes:
            self.list.append(Gtk.Label(label=recipe['name'], xalign=0, margin_start=12, margin_end=12,
                                       margin_top=8, margin_bottom=8))
        self.list.connect('row-selected', self.on_row_selected)
        # A label, not a TextView: a TextView lays a long text out lazily and corrects its height for seconds after,
        # so a fraction of it would name another place by the time the other device asks; a label's height is exact.
        self.text = Gtk.Label(wrap=True, xalign=0, yalign=0, margin_start=16, margin_end=16, margin_top=12, margin_bottom=12)
        page = Gtk.Box(css_classes=['view'])  # the theme's background for text, behind the margins too
        page.append(self.text)
        self.scroller = Gtk.ScrolledWindow(child=page, hexpand=True, vexpand=True)
        self.adjustment = self.scroller.get_vadjustment()
        self.adjustment.connect('value-changed', self.on_scrolled)
        self.adjustment.connect('changed', self.on_layout)
        sidebar = Gtk.ScrolledWindow(child=self.list, hscrollbar_policy=Gtk.PolicyType.NEVER)
        paned = Gtk.Paned(start_child=sidebar, end_child=self.scroller, position=200)
        self.window.set_child(paned)
        self.show_recipe(self.current, self.pending_scroll or 0.0)

    def show_recipe(self, recipe, scroll):
        """Shows `recipe` scrolled to `scroll` (a fraction), as the window's title and the app's current activity."""
        self.current = recipe
        self.pending_scroll = scroll
        self.window.set_title(recipe['name'])
        row = self.list.get_row_at_index(self.recipes.index(recipe))
        if self.list.get_selected_row() is not row:
            self.list.select_row(row)
        self.text.set_text(recipe_text(recipe))
        self.on_layout(self.adjustment)
        self.publish()

    def on_row_selected(self, listbox, row):
        if row is not None and self.recipes[row.get_index()] is not self.current:
            self.show_recipe(self.recipes[row.get_index()], 0.0)

    def scroll_fraction(self):
        room = self.adjustment.get_upper() - self.adjustment.get_page_size()
        return round(self.adjustment.get_value() / room, 4) if room > 0 else 0.0

    def on_layout(self, adjustment):
        """Scrolls to the position asked for once the text is laid out: the room to scroll changes as the window is
        sized, so the position is set again at each change, and counts as shown once there is room and no change came
        for 500 ms (or after 3 s, for a text too short to scroll)."""
        if self.pending_scroll is None:
            return
        room = adjustment.get_upper() - adjustment.get_page_size()
        if room <= 0 and self.pending_scroll > 0:
            if not self.settle:
                self.settle = GLib.timeout_add(3000, self.on_settled)
            return
        # Not here: 'changed' comes while the view is being sized, and a value set then is not where the view draws.
        GLib.idle_add(self.apply_scroll)
        if self.settle:
            GLib.source_remove(self.settle)
        self.settle = GLib.timeout_add(500, self.on_settled)

    def apply_scroll(self):
        if self.pending_scroll is not None:
            room = self.adjustment.get_upper() - self.adjustment.get_page_size()
            self.adjustment.set_value(self.pending_scroll * max(room, 0))
        return GLib.SOURCE_REMOVE

    def on_settled(self):
        self.settle = 0
        self.apply_scroll()
        self.pending_scroll = None
        self.report('shown', recipe=self.current['id'], title=self.current['name'],
                    window_title=self.window.get_title(), scroll=self.scroll_fraction())
        if self.then_scroll is not None:
            GLib.timeout_add(500, self.scroll_as_reader, min(max(self.then_scroll, 0.0), 1.0))
            self.then_scroll = None
        return GLib.SOURCE_REMOVE

    def scroll_as_reader(self, fraction):
        """--then-scroll: moves the view as a person scrolling would, through the same signal (A6)."""
        self.adjustment.set_value(fraction * (self.adjustment.get_upper() - self.adjustment.get_page_size()))
        self.report('scrolled', recipe=self.current['id'], scroll=self.scroll_fraction())
        return GLib.SOURCE_REMOVE

    def on_scrolled(self, adjustment):
        # A6: the state changed; the agent asks for it (Save) only when it needs it.
        if self.pending_scroll is None and self.activity is not None and not self.dirty:
            self.dirty = True
            self.agent.set_needs_save(self.activity)

    # The activity ----------------------------------------------------------------------------------------------------

    def state(self):
        recipe = self.current
        scroll = self.pending_scroll if self.pending_scroll is not None else self.scroll_fraction()
        return {'title': recipe['name'],
                'userInfo': {'recipe': recipe['id'], 'scroll': float(scroll), 'version': STATE_VERSION}}

    def publish(self):
        """Makes the recipe shown the current activity (A1, A9), once the agent has the app and a window is up."""
        if self.agent is None or not self.agent.registered or self.window is None:
            return
        if self.activity is None:
            try:
                self.activity = self.agent.create_activity(ACTIVITY_TYPE, self.state())
            except GLib.Error as error:
                self.report('refused', method='CreateActivity', message=error.message)
                return
        else:
            self.agent.update_activity(self.activity, self.state())
        self.dirty = False
        self.agent.become_current(self.activity)

    # What the agent calls (baton_dbus's delegate) --------------------------------------------------------------------

    def registered(self, device_id, device_name):
        self.activity = None
        self.report('registered', device=device_name)
        self.publish()

    def unregistered(self, reason):
        self.activity = None
        self.report('unregistered', reason=reason)

    def save(self, activity, deadline_ms):
        # A7: the whole state, now; after this the agent considers it saved.
        self.dirty = False
        state = self.state()
        self.report('saved', recipe=state['userInfo']['recipe'], scroll=state['userInfo']['scroll'])
        return state

    def was_continued(self, activity):
        self.report('was_continued', recipe=self.current['id'])  # A8: this device's copy lives on; nothing to do

    def not_current(self, activity):
        self.report('not_current')

    def will_continue(self, continuation, activity_type):
        self.report('will_continue', activity_type=activity_type)

    def continue_activity(self, continuation, activity):
        info = activity.get('userInfo') or {}
        version = info.get('version', STATE_VERSION)
        if activity.get('activityType') != ACTIVITY_TYPE or not isinstance(version, int) or version > STATE_VERSION:
            self.report('refused', reason=f'activity {activity.get("activityType")} version {version}')
            return False  # H1: from a newer Recipes; better refused than shown wrong
        recipe = self.by_id.get(info.get('recipe'))
        if recipe is None:
            self.report('refused', reason=f'no recipe {info.get("recipe")!r} here')
            return False
        scroll = info.get('scroll', 0.0)
        scroll = min(max(float(scroll), 0.0), 1.0) if isinstance(scroll, (int, float)) else 0.0
        self.report('continued', recipe=recipe['id'], scroll=scroll)
        if self.window is None:
            self.pending_scroll = scroll
            self.current = recipe
            self.show_window()  # launched for this continuation: builds the window at the recipe
        else:
            self.show_recipe(recipe, scroll)
            self.window.present()
        return True

    def did_fail(self, continuation, activity_type, error_name, message):
        self.report('failed', error=error_name, message=message)


if __name__ == '__main__':
    if Gdk.Display.get_default() is None:
        # Said here, not as a traceback from the window, and not status 0: whoever launched the app must see it failed.
        print('recipes: cannot open a display (DISPLAY or WAYLAND_DISPLAY is not set, or not reachable)', file=sys.stderr)
        sys.exit(1)
    sys.exit(RecipesApp().run(sys.argv))
