package ai.kestrel;

/** Which of the person's hands ({@code ks_handedness}). */
public enum Handedness {
    LEFT,
    RIGHT
}
