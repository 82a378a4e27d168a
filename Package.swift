// swift-tools-version:6.0
import PackageDescription

/// `OBS_TSAN=1` builds for ThreadSanitizer: locks TSan can see (see `Locked.swift`).
let sanitizerBuild = Context.environment["OBS_TSAN"] == "1"

let strict: [SwiftSetting] =
    [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("InternalImportsByDefault"),
    ] + (sanitizerBuild ? [.define("OBS_TSAN")] : [])

let package = Package(
    name: "ObsServer",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "obs-server", targets: ["ObsServer"]),
        .library(name: "ObservationCore", targets: ["ObservationCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        // 1.16: LogHandler.log(event:) (the JSON log handler).
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .target(
            name: "CMicroHTTPD",
            linkerSettings: [.linkedLibrary("microhttpd")]
        ),
        .target(name: "CLinux"),
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .target(
            name: "ObservationCore",
            swiftSettings: strict
        ),
        .executableTarget(
            name: "ObsServer",
            dependencies: [
                "CCurl",
                "CLinux",
                "CMicroHTTPD",
                "CLibPQ",
                "COpenSSL",
                "CSQLite",
                "ObservationCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ObservationCoreTests",
            dependencies: ["ObservationCore"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ObsServerTests",
            dependencies: ["ObsServer", "ObservationCore"],
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)
