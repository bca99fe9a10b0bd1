package ai.kestrel;

/**
 * A native call failed. Carries the {@link Status} and the native message ({@code ks_last_error}),
 * which names the file, node, tensor or option and the offending value.
 */
public class KestrelException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final Status status;
    private final String nativeMessage;

    public KestrelException(Status status, String nativeMessage) {
        super(status + ": " + nativeMessage);
        this.status = status;
        this.nativeMessage = nativeMessage;
    }

    /** Called from native code. */
    KestrelException(int code, String nativeMessage) {
        this(Status.fromCode(code), nativeMessage == null ? "" : nativeMessage);
    }

    public Status status() {
        return status;
    }

    /** The native error message without the status prefix. */
    public String nativeMessage() {
        return nativeMessage;
    }
}
