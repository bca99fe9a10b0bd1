package ai.kestrel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.File;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Store over real signed packages: keys and packages made in the setup with the build's ks-sign
 * (keygen + sign), the payload the real face detector model plus a small file; install v1 then
 * v2 (bytes, stream, file), refuse tampered, foreign-key, downgraded, truncated and oversized
 * input with their causes, roll back, mark bad, check; the StoreListener's events (installs, a
 * failed self-test, markBad), a listener that throws and one that calls its own store.
 */
class StoreTest {
    @TempDir
    static Path work;

    private static byte[] releasePub;
    private static byte[] v1;
    private static byte[] v2;
    private static byte[] foreign;
    private static File v2File;
    private static byte[] model;

    @BeforeAll
    static void setUp() throws Exception {
        Kestrel.load();
        String sign = TestTools.tool("sign");
        File modelFile = TestTools.model("ksm/face_detection_short_range.ksm");
        model = Files.readAllBytes(modelFile.toPath());
        Path pkgDir = work.resolve("face");
        Files.createDirectories(pkgDir.resolve("notes"));
        Files.copy(modelFile.toPath(), pkgDir.resolve("detector.ksm"));
        Files.write(pkgDir.resolve("notes/readme.txt"),
                "face detector, short range".getBytes(StandardCharsets.UTF_8));
        String release = work.resolve("release").toString();
        String other = work.resolve("other").toString();
        TestTools.run(sign, "keygen", release);
        TestTools.run(sign, "keygen", other);
        v1 = signed(sign, release, pkgDir, "1.0.0", 100, "v1.kspkg");
        v2 = signed(sign, release, pkgDir, "2.0.0", 200, "v2.kspkg");
        foreign = signed(sign, other, pkgDir, "3.0.0", 300, "v3-other.kspkg");
        v2File = work.resolve("v2.kspkg").toFile();
        releasePub = Store.publicKeyFromHex(
                new String(Files.readAllBytes(Path.of(release + ".pub")), StandardCharsets.UTF_8));
    }

    private static byte[] signed(String sign, String key, Path dir, String version, long issued,
            String name) throws Exception {
        Path out = work.resolve(name);
        TestTools.run(sign, "sign", "--key", key + ".sec", dir.toString(), out.toString(), "--id",
                "face", "--version", version, "--issued", Long.toString(issued));
        return Files.readAllBytes(out);
    }

    private static StoreException refused(DeliveryError why, Status status,
            org.junit.jupiter.api.function.Executable call) {
        StoreException e = assertThrows(StoreException.class, call);
        assertEquals(why, e.refusal(), e.getMessage());
        assertEquals(status, e.status(), e.getMessage());
        assertTrue(!e.nativeMessage().isEmpty());
        return e;
    }

    private Store open(String name) {
        return Store.open(work.resolve(name).toString(), releasePub);
    }

    @Test
    void installUpdateRefuseRollBack() throws Exception {
        try (Store store = open("store-main")) {
            assertNull(store.current("face"));
            PackageInfo i1 = store.install(v1);
            assertEquals("face", i1.id());
            assertEquals("1.0.0", i1.version());
            assertEquals(100, i1.issued());
            assertEquals(2, i1.numFiles());
            assertEquals(i1, store.current("face"));
            String path = store.filePath("face", "detector.ksm");
            assertArrayEquals(model, Files.readAllBytes(Path.of(path)));

            // v2 from a stream (as from an HTTP body), read in small pieces.
            PackageInfo i2 = store.install(new TrickleStream(new ByteArrayInputStream(v2)));
            assertEquals("2.0.0", i2.version());
            assertEquals("2.0.0", store.current("face").version());
            assertEquals("1.0.0", store.previous("face").version());
            store.check("face");
            // The same package again: nothing to do.
            assertEquals(i2, store.installFile(v2File.getPath()));

            // Tampered payload: one byte of the model flipped.
            byte[] bad = v2.clone();
            bad[bad.length - 100] ^= 1;
            StoreException e = refused(DeliveryError.HASH_MISMATCH, Status.CHECKSUM_MISMATCH,
                    () -> store.install(bad));
            assertTrue(e.nativeMessage().contains("detector.ksm"), e.nativeMessage());
            // Tampered manifest (the version field): the signature no longer matches.
            byte[] badManifest = v2.clone();
            badManifest[32 + 1 + 4] ^= 1;
            refused(DeliveryError.BAD_SIGNATURE, Status.TAMPERED,
                    () -> store.install(badManifest));
            refused(DeliveryError.UNKNOWN_KEY, Status.TAMPERED, () -> store.install(foreign));
            refused(DeliveryError.DOWNGRADE, Status.INVALID_STATE, () -> store.install(v1));
            // Truncated (a cut-off download) through the stream path too.
            byte[] cut = Arrays.copyOf(v2, v2.length - 10);
            refused(DeliveryError.MALFORMED, Status.INVALID_MODEL,
                    () -> store.install(new ByteArrayInputStream(cut)));
            refused(DeliveryError.MALFORMED, Status.INVALID_MODEL,
                    () -> store.install(new ByteArrayInputStream("<html>".getBytes())));
            // Every refusal left v2 current and intact.
            assertEquals(i2, store.current("face"));
            store.check("face");

            store.rollback("face");
            assertEquals("1.0.0", store.current("face").version());
            assertNull(store.previous("face"));
            refused(DeliveryError.NO_PREVIOUS, Status.INVALID_ARGUMENT,
                    () -> store.rollback("face"));
            assertEquals("", store.lastRollback("face"));

            // v2 again, then the app's own check fails: marked bad, v1 back, never again.
            store.install(v2);
            store.markBad("face", "no face on the reference photo");
            assertEquals("1.0.0", store.current("face").version());
            assertTrue(store.lastRollback("face").contains("no face on the reference photo"));
            refused(DeliveryError.KNOWN_BAD, Status.INVALID_STATE, () -> store.install(v2));
            refused(DeliveryError.NOT_INSTALLED, Status.INVALID_ARGUMENT,
                    () -> store.filePath("face", "missing.ksm"));
        }
    }

    @Test
    void encryptedSelfTestAsksTheKeyProvider() throws Exception {
        String sign = TestTools.tool("sign");
        String protect = TestTools.tool("protect");
        String plain = TestTools.model("ksm/face_detection_short_range.ksm").getPath();
        Path dir = work.resolve("enc");
        Files.createDirectories(dir.resolve("pkg"));
        String key = dir.resolve("app.key").toString();
        String other = dir.resolve("other.key").toString();
        TestTools.run(protect, "keygen", key);
        TestTools.run(protect, "keygen", other);
        TestTools.run(protect, "encrypt", "--key-file", key, plain,
                dir.resolve("pkg/model.ksm").toString());
        // Golden outputs of the plain model; the store runs them on the installed encrypted one.
        Files.write(dir.resolve("pkg/selftest.kst"), goldenSelftest(plain, "model.ksm"));
        String out = dir.resolve("enc.kspkg").toString();
        TestTools.run(sign, "sign", "--key", work.resolve("release.sec").toString(),
                dir.resolve("pkg").toString(), out, "--id", "encface", "--version", "1.0.0",
                "--encryption-key-name", "app-key-2026");
        byte[] pkg = Files.readAllBytes(Path.of(out));
        byte[] appKey = Files.readAllBytes(Path.of(key));
        byte[] otherKey = Files.readAllBytes(Path.of(other));
        String root = work.resolve("store-enc").toString();
        try (Store store = Store.open(root, releasePub)) {
            StoreException e = refused(DeliveryError.NO_KEY, Status.INVALID_ARGUMENT,
                    () -> store.install(pkg));
            assertTrue(e.nativeMessage().contains("app-key-2026"), e.nativeMessage());
            assertNull(store.current("encface"));
        }
        try (Store store = Store.open(root, name -> otherKey.clone(), releasePub)) {
            refused(DeliveryError.NO_KEY, Status.INVALID_ARGUMENT, () -> store.install(pkg));
        }
        try (Store store = Store.open(root, name -> null, releasePub)) {
            refused(DeliveryError.NO_KEY, Status.INVALID_ARGUMENT, () -> store.install(pkg));
        }
        List<String> asked = new ArrayList<>();
        try (Store store = Store.open(root, name -> {
            asked.add(name);
            return appKey.clone();
        }, releasePub)) {
            PackageInfo info = store.install(pkg); // not marked bad by the refusals before
            assertEquals("app-key-2026", info.encryptionKeyName());
            assertEquals(List.of("app-key-2026"), asked);
            assertEquals(info, store.current("encface"));
        }
    }

    /**
     * A selftest.kst (docs/delivery.md, "Self-test") of {@code model} on a deterministic input,
     * recorded through the Session binding (ks-sign selftest records the input after the run,
     * when the session may have reused its memory).
     */
    private static byte[] goldenSelftest(String model, String name) throws IOException {
        return goldenSelftest(model, name, 0.0f);
    }

    /** The same with {@code offset} added to every expected output (non-zero: a failing test). */
    private static byte[] goldenSelftest(String model, String name, float offset)
            throws IOException {
        try (Model m = Model.load(model); Session s = new Session(m)) {
            s.reshape();
            java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
            ByteBuffer head = le(14 + name.length());
            head.put("KSTT".getBytes(StandardCharsets.US_ASCII)).putInt(1);
            head.putShort((short) name.length()).put(name.getBytes(StandardCharsets.US_ASCII));
            head.putInt(m.numInputs());
            out.write(head.array());
            for (int i = 0; i < m.numInputs(); i++) {
                long count = 1;
                for (long d : s.inputInfo(i).shape()) {
                    count *= d;
                }
                float[] x = new float[(int) count];
                for (int j = 0; j < x.length; j++) {
                    x[j] = (float) Math.sin(0.37 * j + i);
                }
                s.setInput(i, x);
                ByteBuffer t = le(12 + 4 * x.length);
                t.putInt(i).putLong(4L * x.length);
                t.asFloatBuffer().put(x);
                out.write(t.array());
            }
            s.run();
            out.write(le(4).putInt(m.numOutputs()).array());
            for (int i = 0; i < m.numOutputs(); i++) {
                float[] y = s.getOutputFloats(i);
                for (int j = 0; j < y.length; j++) {
                    y[j] += offset;
                }
                ByteBuffer t = le(16 + 4 * y.length);
                t.putInt(i).putFloat(1e-4f).putLong(4L * y.length);
                t.asFloatBuffer().put(y);
                out.write(t.array());
            }
            return out.toByteArray();
        }
    }

    private static ByteBuffer le(int size) {
        return ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** Records what a store reports, as "EVENT id version: message". */
    private static final class Recorder implements StoreListener {
        final List<String> events = new ArrayList<>();
        final List<PackageInfo> infos = new ArrayList<>();

        @Override
        public void onEvent(StoreEvent event, PackageInfo info, String message) {
            events.add(event + " " + info.id() + " " + info.version() + ": " + message);
            infos.add(info);
        }
    }

    /** What a listener under test throws. */
    private static final class ListenerBroke extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ListenerBroke(String message) {
            super(message);
        }
    }

    private static byte[] selftestV1;
    private static byte[] selftestV2;

    /**
     * Package "stface" with the face detector model and its self-test: 1.0.0 with the model's
     * golden outputs (passes), 2.0.0 with every expected output off by one (fails).
     */
    private static synchronized void makeSelftestPackages() throws Exception {
        if (selftestV1 != null) {
            return;
        }
        String sign = TestTools.tool("sign");
        String plain = TestTools.model("ksm/face_detection_short_range.ksm").getPath();
        Path dir = work.resolve("selftest");
        Files.createDirectories(dir.resolve("pkg"));
        Files.copy(Path.of(plain), dir.resolve("pkg/model.ksm"));
        String key = work.resolve("release.sec").toString();
        byte[][] out = new byte[2][];
        for (int v = 1; v <= 2; v++) {
            Files.write(dir.resolve("pkg/selftest.kst"),
                    goldenSelftest(plain, "model.ksm", v == 1 ? 0.0f : 1.0f));
            Path pkg = dir.resolve("v" + v + ".kspkg");
            TestTools.run(sign, "sign", "--key", key, dir.resolve("pkg").toString(),
                    pkg.toString(), "--id", "stface", "--version", v + ".0.0", "--issued",
                    Integer.toString(100 * v));
            out[v - 1] = Files.readAllBytes(pkg);
        }
        selftestV1 = out[0];
        selftestV2 = out[1];
    }

    @Test
    void listenerHearsInstallsAndRollBacks() throws Exception {
        Recorder rec = new Recorder();
        try (Store store = Store.open(work.resolve("store-events").toString(), null, rec,
                releasePub)) {
            PackageInfo i1 = store.install(v1);
            assertEquals(List.of("INSTALLED face 1.0.0: installed"), rec.events);
            assertEquals(i1, rec.infos.get(0));
            assertEquals(100, rec.infos.get(0).issued());
            PackageInfo i2 = store.install(new ByteArrayInputStream(v2));
            assertEquals("INSTALLED face 2.0.0: installed", rec.events.get(1));
            assertEquals(i2, rec.infos.get(1));
            // Nothing to do, refused, rolled back without marking bad: no event.
            store.installFile(v2File.getPath());
            refused(DeliveryError.DOWNGRADE, Status.INVALID_STATE, () -> store.install(v1));
            store.rollback("face");
            assertEquals(2, rec.events.size(), rec.events.toString());
            store.install(v2);
            assertEquals("INSTALLED face 2.0.0: installed", rec.events.get(2));
            store.markBad("face", "no face on the reference photo");
            assertEquals(4, rec.events.size(), rec.events.toString());
            String last = rec.events.get(3);
            assertTrue(last.startsWith("ROLLED_BACK face 2.0.0: "), last);
            assertTrue(last.contains("no face on the reference photo"), last);
            assertEquals(i2, rec.infos.get(3));
            assertEquals("1.0.0", store.current("face").version());
        }

        // A failing self-test: ROLLED_BACK with the self-test's reason, the install refused.
        makeSelftestPackages();
        Recorder st = new Recorder();
        try (Store store = Store.open(work.resolve("store-events-st").toString(), null, st,
                releasePub)) {
            assertEquals("1.0.0", store.install(selftestV1).version());
            StoreException e = refused(DeliveryError.SELFTEST_FAILED, Status.CHECKSUM_MISMATCH,
                    () -> store.install(selftestV2));
            assertEquals(2, st.events.size(), st.events.toString());
            assertEquals("INSTALLED stface 1.0.0: installed", st.events.get(0));
            String rolled = st.events.get(1);
            assertTrue(rolled.startsWith("ROLLED_BACK stface 2.0.0: stface 2.0.0: self-test "
                    + "failed: model.ksm: output"), rolled);
            assertTrue(e.nativeMessage().endsWith(rolled.substring("ROLLED_BACK stface 2.0.0: "
                    .length())), rolled + " / " + e.nativeMessage());
            assertEquals(store.lastRollback("stface"),
                    rolled.substring("ROLLED_BACK stface 2.0.0: ".length()));
            assertEquals(0, e.getSuppressed().length);
            assertEquals("1.0.0", store.current("stface").version());
        }
    }

    @Test
    void listenerExceptionsDoNotUnwindThroughTheStore() throws Exception {
        makeSelftestPackages();
        List<String> heard = new ArrayList<>();
        StoreListener throwing = (event, info, message) -> {
            heard.add(event + " " + info.version());
            throw new ListenerBroke("listener broke on " + info.version());
        };
        String root = work.resolve("store-throwing").toString();
        try (Store store = Store.open(root, null, throwing, releasePub)) {
            // The install is committed; its call then throws what the listener threw.
            ListenerBroke e = assertThrows(ListenerBroke.class, () -> store.install(v1));
            assertEquals("listener broke on 1.0.0", e.getMessage());
            assertEquals("1.0.0", store.current("face").version());
            store.check("face");
            assertThrows(ListenerBroke.class, () -> store.installFile(v2File.getPath()));
            assertEquals("2.0.0", store.current("face").version());
            assertEquals("1.0.0", store.previous("face").version());
            // Calls that report nothing are unaffected.
            store.rollback("face");
            assertEquals("1.0.0", store.current("face").version());
            assertThrows(ListenerBroke.class, () -> store.install(selftestV1));
            assertEquals("1.0.0", store.current("stface").version());
            // A failing self-test: the StoreException, with the listener's as suppressed.
            StoreException refusal = refused(DeliveryError.SELFTEST_FAILED,
                    Status.CHECKSUM_MISMATCH, () -> store.install(selftestV2));
            Throwable[] suppressed = refusal.getSuppressed();
            assertEquals(1, suppressed.length);
            assertTrue(suppressed[0] instanceof ListenerBroke, suppressed[0].toString());
            assertEquals("listener broke on 2.0.0", suppressed[0].getMessage());
            assertEquals("1.0.0", store.current("stface").version());
            // markBad: rolled back all the same.
            assertThrows(ListenerBroke.class, () -> store.markBad("face", "bad"));
            assertNull(store.current("face"));
            assertTrue(store.lastRollback("face").contains("bad"));
        }
        assertEquals(List.of("INSTALLED 1.0.0", "INSTALLED 2.0.0", "INSTALLED 1.0.0",
                "ROLLED_BACK 2.0.0", "ROLLED_BACK 1.0.0"), heard);
    }

    @Test
    void listenerCannotCallItsOwnStore() {
        Store[] self = new Store[1];
        List<String> calls = new ArrayList<>();
        StoreListener reentrant = (event, info, message) -> {
            calls.add("called");
            self[0].current("face"); // would deadlock on the store's lock: refused
        };
        try (Store store = Store.open(work.resolve("store-reentrant").toString(), null,
                reentrant, releasePub)) {
            self[0] = store;
            IllegalStateException e =
                    assertThrows(IllegalStateException.class, () -> store.install(v1));
            assertTrue(e.getMessage().contains("StoreListener"), e.getMessage());
            assertEquals(List.of("called"), calls);
            // The store is still usable, outside the listener.
            assertEquals("1.0.0", store.current("face").version());
        }
        StoreListener closing = (event, info, message) -> self[0].close();
        try (Store store = Store.open(work.resolve("store-reentrant").toString(), null, closing,
                releasePub)) {
            self[0] = store;
            assertThrows(IllegalStateException.class, () -> store.install(v2));
            assertTrue(!store.isClosed());
            assertEquals("2.0.0", store.current("face").version());
        }
    }

    @Test
    void streamLimitsAreEnforcedBeforeReading() {
        try (Store store = open("store-limits")) {
            // A header announcing a 1 TiB payload: refused after the 32 header bytes.
            byte[] huge = Arrays.copyOf(v1, 32);
            huge[16 + 5] = 1; // payload size 2^40
            CountingStream in = new CountingStream(new ByteArrayInputStream(huge));
            StoreException e = refused(DeliveryError.TOO_LARGE, Status.LIMIT_EXCEEDED,
                    () -> store.install(in));
            assertTrue(e.nativeMessage().contains(Long.toString(Store.MAX_PACKAGE_BYTES)),
                    e.nativeMessage());
            assertEquals(32, in.count);
            // Bytes after the package: refused, nothing installed.
            byte[] longer = Arrays.copyOf(v1, v1.length + 1);
            refused(DeliveryError.MALFORMED, Status.INVALID_MODEL,
                    () -> store.install(new ByteArrayInputStream(longer)));
            assertNull(store.current("face"));
            assertTrue(Store.MAX_PACKAGE_BYTES > (1L << 30));
        }
    }

    @Test
    void corruptionAndLockingAreReported() throws IOException {
        try (Store store = open("store-corrupt")) {
            store.install(v1);
            // A second open of the same folder is refused while the first is open.
            KestrelException e = assertThrows(KestrelException.class, () -> open("store-corrupt"));
            assertEquals(Status.INVALID_STATE, e.status());
            String readme = store.filePath("face", "notes/readme.txt");
            try (RandomAccessFile f = new RandomAccessFile(readme, "rw")) {
                f.seek(0);
                f.write('F');
            }
            refused(DeliveryError.STORE_CORRUPT, Status.CHECKSUM_MISMATCH,
                    () -> store.check("face"));
        }
        // Closed: usable again by a new store, which sees the installed version.
        try (Store store = open("store-corrupt")) {
            assertNotNull(store.current("face"));
        }
    }

    @Test
    void badArgumentsAreClear() {
        StoreException e = assertThrows(StoreException.class,
                () -> Store.open(work.resolve("x").toString(), new byte[31]));
        assertEquals(Status.INVALID_ARGUMENT, e.status());
        assertTrue(e.nativeMessage().contains("31 bytes"), e.nativeMessage());
        assertThrows(StoreException.class, () -> Store.open(work.resolve("x").toString()));
        assertThrows(IllegalArgumentException.class, () -> Store.publicKeyFromHex("abc"));
        byte[] k = Store.publicKeyFromHex(" " + "0f".repeat(32) + "\n");
        assertEquals(0x0f, k[31]);
        Store store = open("store-closed");
        store.close();
        assertThrows(IllegalStateException.class, () -> store.current("face"));
    }

    /** Hands out at most 7 bytes per read, as a slow network does. */
    private static final class TrickleStream extends FilterInputStream {
        TrickleStream(InputStream in) {
            super(in);
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            return super.read(b, off, Math.min(len, 7));
        }
    }

    /** Counts the bytes read. */
    private static final class CountingStream extends FilterInputStream {
        long count;

        CountingStream(InputStream in) {
            super(in);
        }

        @Override
        public int read() throws IOException {
            int r = super.read();
            count += r >= 0 ? 1 : 0;
            return r;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int r = super.read(b, off, len);
            count += Math.max(r, 0);
            return r;
        }
    }
}
