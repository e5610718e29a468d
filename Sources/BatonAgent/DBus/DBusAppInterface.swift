import BatonDBus
import BatonProtocol

/// The names and shapes of the agent's D-Bus interface for apps (issue 28 item 1; docs/PROTOCOL.md §11): what the bus
/// adapter owns and exports, each method's signature (arguments of another are refused before any is read), the
/// errors, and the introspection data.
enum DBusAppInterface {
    /// The agent's well-known name on the session bus.
    static let busName = "org.baton.Agent"
    /// Where the agent's interface is, and its versioned name.
    static let path = "/org/baton/Agent1"
    static let interface = "org.baton.Agent1"
    /// Where an app's own interface is (the agent calls it there, at the app's unique name).
    static let appPath = "/org/baton/App1"
    static let appInterface = "org.baton.App1"
    static let introspectable = "org.freedesktop.DBus.Introspectable"

    /// Each method of `org.baton.Agent1` and the arguments it takes.
    static let signatures: [String: String] = [
        "Register": "sa{sv}",
        "CreateActivity": "sa{sv}",
        "UpdateActivity": "ta{sv}",
        "BecomeCurrent": "t",
        "ResignCurrent": "t",
        "Invalidate": "t",
        "SetNeedsSave": "t",
        "OpenStream": "t",
    ]

    /// D-Bus's own error names the interface answers with (§11 "Errors").
    enum Error {
        static let accessDenied = "org.freedesktop.DBus.Error.AccessDenied"
        static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
        static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
        static let failed = "org.freedesktop.DBus.Error.Failed"
        static let payloadTooLarge = "org.baton.Error.PayloadTooLarge"
        static let tooManyActivities = "org.baton.Error.TooManyActivities"
        static let noStreams = "org.baton.Error.NoStreams"
        static let alreadyConnected = "org.baton.Error.AlreadyConnected"
        static let unreadable = "org.baton.Error.Unreadable"
    }

    /// The D-Bus error for a §7 refusal code or a continuation failure reason: `org.baton.Error.` and the reason with
    /// its first letter in upper case, but `notPermitted`, which is D-Bus's own AccessDenied (§11 "Errors").
    static func errorName(for reason: String) -> String {
        guard reason != IPCRefusal.notPermitted.rawValue else { return Error.accessDenied }
        // A reason is a short identifier (≤ 64, §7); anything else is not a D-Bus name's element.
        let element = reason.unicodeScalars.filter { ($0.isASCII && $0.properties.isAlphabetic) || ("0"..."9").contains($0) || $0 == "_" }
        guard let first = element.first, !("0"..."9").contains(first) else { return Error.failed }
        return "org.baton.Error." + String(first).uppercased() + String(String.UnicodeScalarView(element.dropFirst()))
    }

    /// `org.freedesktop.DBus.Introspectable.Introspect`'s answer for ``path``: both interfaces, every method and
    /// argument of §11 (the app's, too, so a developer reads what to export from `gdbus introspect`).
    static let introspection = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <node name="\(path)">
          <interface name="\(introspectable)">
            <method name="Introspect"><arg name="xml_data" type="s" direction="out"/></method>
          </interface>
          <interface name="\(interface)">
            <method name="Register">
              <arg name="app_id" type="s" direction="in"/><arg name="options" type="a{sv}" direction="in"/>
              <arg name="device_id" type="s" direction="out"/><arg name="device_name" type="s" direction="out"/>
            </method>
            <method name="CreateActivity">
              <arg name="activity_type" type="s" direction="in"/><arg name="properties" type="a{sv}" direction="in"/>
              <arg name="activity" type="t" direction="out"/>
            </method>
            <method name="UpdateActivity">
              <arg name="activity" type="t" direction="in"/><arg name="properties" type="a{sv}" direction="in"/>
            </method>
            <method name="BecomeCurrent"><arg name="activity" type="t" direction="in"/></method>
            <method name="ResignCurrent"><arg name="activity" type="t" direction="in"/></method>
            <method name="Invalidate"><arg name="activity" type="t" direction="in"/></method>
            <method name="SetNeedsSave"><arg name="activity" type="t" direction="in"/></method>
            <method name="OpenStream">
              <arg name="continuation" type="t" direction="in"/>
              <arg name="stream" type="t" direction="out"/><arg name="input" type="h" direction="out"/><arg name="output" type="h" direction="out"/>
            </method>
          </interface>
          <!-- What an app exports at \(appPath) on the connection it registers from; the agent calls it there. -->
          <interface name="\(appInterface)">
            <method name="Save">
              <arg name="activity" type="t" direction="in"/><arg name="deadline_ms" type="t" direction="in"/>
              <arg name="properties" type="a{sv}" direction="out"/>
            </method>
            <method name="WasContinued"><arg name="activity" type="t" direction="in"/></method>
            <method name="NotCurrent"><arg name="activity" type="t" direction="in"/></method>
            <method name="WillContinue">
              <arg name="continuation" type="t" direction="in"/><arg name="activity_type" type="s" direction="in"/>
            </method>
            <method name="Continue">
              <arg name="continuation" type="t" direction="in"/><arg name="activity" type="a{sv}" direction="in"/>
              <arg name="handled" type="b" direction="out"/>
            </method>
            <method name="DidFail">
              <arg name="continuation" type="t" direction="in"/><arg name="activity_type" type="s" direction="in"/>
              <arg name="error_name" type="s" direction="in"/><arg name="message" type="s" direction="in"/>
            </method>
            <method name="AcceptStream">
              <arg name="activity" type="t" direction="in"/><arg name="stream" type="t" direction="in"/>
              <arg name="input" type="h" direction="in"/><arg name="output" type="h" direction="in"/>
            </method>
            <method name="StreamReset">
              <arg name="stream" type="t" direction="in"/><arg name="error_name" type="s" direction="in"/>
              <arg name="message" type="s" direction="in"/>
            </method>
          </interface>
        </node>

        """
}
