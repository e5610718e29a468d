/// The one handle the agent keeps of a service that runs work for it and has a loop to wake (the sessions', the app
/// socket's; issue 26 item 1): it starts work as a child of the service's `run()` and rings the doorbell the
/// service's loop sleeps on. The service owns both; the agent reaches neither otherwise.
final class ServiceWork: Sendable {
    let pool = TaskPool()
    /// What the service's loop sleeps on between its deadlines.
    let bell = Doorbell()

    init() {}

    /// Runs `body` as a child of the service's `run()`; the handle cancels it. Dropped once the service has stopped.
    @discardableResult
    func start(_ body: @escaping @Sendable () async -> Void) -> TaskPool.Handle {
        pool.start(body)
    }
}
