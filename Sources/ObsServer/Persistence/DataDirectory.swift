import Foundation

/// The `--data-dir`: created on first start (mode 0700: it holds observer tokens), checked
/// writable, and locked so that a second server cannot run on it at the same time.
final class DataDirectory: Sendable {
    let path: String
    /// The open lock file; the lock (flock) lasts as long as this descriptor.
    private let lockDescriptor: Int32

    init(path: String) throws(ConfigError) {
        self.path = path
        do {
            try FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw ConfigError("cannot create the data directory \(path): \(error.localizedDescription)")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ConfigError("the data directory \(path) is not a directory")
        }
        guard FileManager.default.isWritableFile(atPath: path) else {
            throw ConfigError("the data directory \(path) is not writable")
        }
        let descriptor = open(path + "/obs.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw ConfigError("cannot open \(path)/obs.lock: \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            throw ConfigError("the data directory \(path) is in use by another obs-server")
        }
        lockDescriptor = descriptor
    }

    deinit {
        close(lockDescriptor)
    }
}
