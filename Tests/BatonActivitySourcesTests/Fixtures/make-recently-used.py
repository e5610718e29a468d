import gi, os, sys
gi.require_version('Gtk', '3.0')
from gi.repository import Gtk, GLib
m = Gtk.RecentManager.get_default()
docs = sys.argv[1]
def add(name, mime, app, exec_):
    d = Gtk.RecentData()
    d.display_name = None; d.description = None
    d.mime_type = mime; d.app_name = app; d.app_exec = exec_
    d.is_private = False
    uri = GLib.filename_to_uri(os.path.join(docs, name), None)
    assert m.add_full(uri, d)
add("report.odt", "application/vnd.oasis.opendocument.text", "LibreOffice Writer", "'soffice' --writer %u")
add("Tom & Jerry's notes été.txt", "text/plain", "gedit", "gedit %u")
add("report.odt", "application/vnd.oasis.opendocument.text", "org.gnome.TextEditor", "gnome-text-editor %u")
add("song.ogg", "audio/ogg", "mpv", "mpv --player-operation-mode=pseudo-gui -- %U")
# a plain add_item as an app does
m.add_item("https://example.org/page?a=1&b=2")
loop = GLib.MainLoop()
GLib.timeout_add(1500, loop.quit)
loop.run()
