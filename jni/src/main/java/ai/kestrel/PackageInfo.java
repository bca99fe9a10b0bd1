package ai.kestrel;

import java.util.Arrays;

/**
 * What a package's signed manifest says ({@code ks_package_info}): returned by the {@link Store}
 * after an install and by {@link Store#current}. Immutable.
 */
public final class PackageInfo {
    private final String id;
    private final int major;
    private final int minor;
    private final int patch;
    private final int minRuntime;
    private final long issued;
    private final byte[] keyId;
    private final String encryptionKeyName;
    private final int numFiles;
    private final long payloadBytes;
    private final byte[] digest;

    /** Called from native code. */
    PackageInfo(String id, int major, int minor, int patch, int minRuntime, long issued,
            byte[] keyId, String encryptionKeyName, int numFiles, long payloadBytes,
            byte[] digest) {
        this.id = id;
        this.major = major;
        this.minor = minor;
        this.patch = patch;
        this.minRuntime = minRuntime;
        this.issued = issued;
        this.keyId = keyId;
        this.encryptionKeyName = encryptionKeyName;
        this.numFiles = numFiles;
        this.payloadBytes = payloadBytes;
        this.digest = digest;
    }

    /** Package id, e.g. {@code "face"}: {@code [a-z0-9][a-z0-9._-]*}. */
    public String id() {
        return id;
    }

    public int major() {
        return major;
    }

    public int minor() {
        return minor;
    }

    public int patch() {
        return patch;
    }

    /** "major.minor.patch". */
    public String version() {
        return major + "." + minor + "." + patch;
    }

    /**
     * Oldest Kestrel that may use it, as {@code KS_VERSION_HEX}:
     * {@code major << 16 | minor << 8 | patch}.
     */
    public int minRuntime() {
        return minRuntime;
    }

    /** The signer's monotonic stamp (ks-sign: Unix seconds); orders replays. */
    public long issued() {
        return issued;
    }

    /** First 8 bytes of SHA-256 of the signer's public key (a copy). */
    public byte[] keyId() {
        return keyId.clone();
    }

    /** The key name of the package's encrypted models ("" when none). */
    public String encryptionKeyName() {
        return encryptionKeyName;
    }

    public int numFiles() {
        return numFiles;
    }

    /** Sum of the file sizes. */
    public long payloadBytes() {
        return payloadBytes;
    }

    /** SHA-256 of the signed header and manifest: identifies one signed package (a copy). */
    public byte[] digest() {
        return digest.clone();
    }

    @Override
    public String toString() {
        return "PackageInfo{" + id + " " + version() + ", " + numFiles + " file(s), "
                + payloadBytes + " bytes, issued " + issued + "}";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PackageInfo && Arrays.equals(digest, ((PackageInfo) o).digest);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(digest);
    }
}
