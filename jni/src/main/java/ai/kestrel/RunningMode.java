package ai.kestrel;

/** {@code ks_running_mode}: independent photos or a video stream. */
public enum RunningMode {
    /** Every call detects from scratch; timestamps are ignored. */
    IMAGE,
    /** A stream: tracking, stable ids and smoothing; timestamps must strictly increase. */
    VIDEO
}
