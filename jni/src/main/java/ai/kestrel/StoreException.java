package ai.kestrel;

/**
 * A {@link Store} call failed: the {@link Status} and native message of {@link KestrelException}
 * plus the delivery cause ({@code ks_store_last_refusal}), e.g. {@link DeliveryError#DOWNGRADE}
 * with {@link Status#INVALID_STATE}. The installed version is untouched by every refusal.
 */
public class StoreException extends KestrelException {
    private static final long serialVersionUID = 1L;

    private final DeliveryError refusal;

    public StoreException(Status status, DeliveryError refusal, String nativeMessage) {
        super(status, "[" + refusal + "] " + (nativeMessage == null ? "" : nativeMessage));
        this.refusal = refusal;
    }

    /** Called from native code. */
    StoreException(int status, int refusal, String nativeMessage) {
        this(Status.fromCode(status), DeliveryError.fromCode(refusal), nativeMessage);
    }

    /** Why the store refused: one value per cause (docs/delivery.md, "Refusals"). */
    public DeliveryError refusal() {
        return refusal;
    }
}
