/// When the app socket service's reaper looks for ended programs besides a SIGCHLD (issue 26 item 1), pure. A
/// SIGCHLD can be missed (several children ending as one signal, or an app reaped before it was recorded), so while
/// a program started here may run it looks again every ``backup``; while none does it sleeps until one is started
/// (issue 11 part 8: no wakeup while idle).
struct ReapSchedule: Sendable {
    /// How often the reaper looks while a program started here may run.
    var backup: Duration = .seconds(60)

    /// How long the reaper waits for a SIGCHLD or a start before it looks anyway; nil: until one comes.
    func wait(childrenRunning: Bool) -> Duration? {
        childrenRunning ? backup : nil
    }
}
