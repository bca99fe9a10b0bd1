package ai.kestrel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import org.junit.jupiter.api.Test;

/** The engine API on the BlazeFace short-range model converted into the bundles directory. */
class SessionTest {
    static File faceModel() {
        File f = new File(Kestrel.modelsDir(), "ksm/face_detection_short_range.ksm");
        assertTrue(f.isFile(), "model not found: " + f + " (build the ks_bundles target)");
        return f;
    }

    @Test
    void modelDescribesItsTensors() {
        try (Model m = Model.load(faceModel().getPath())) {
            assertEquals(1, m.numInputs());
            assertTrue(m.numOutputs() >= 2);
            TensorInfo in = m.inputInfo(0);
            assertEquals(DataType.F32, in.dataType());
            assertArrayEquals(new long[] {1, 128, 128, 3}, in.shape());
        }
    }

    @Test
    void runWithFloatArraysAndBuffersAgree() throws Exception {
        float[] input = new float[128 * 128 * 3];
        for (int i = 0; i < input.length; i++) {
            input[i] = (float) Math.sin(i * 0.01);
        }
        byte[] fileBytes = Files.readAllBytes(faceModel().toPath());
        try (Model m = Model.fromBytes(fileBytes);
                Session s = new Session(m, Session.Options.builder().numThreads(2).build())) {
            s.reshape();
            assertArrayEquals(new long[] {1, 128, 128, 3}, s.inputInfo(0).shape());
            s.setInput(0, input);
            s.run();
            float[] out0 = s.getOutputFloats(0);
            assertEquals(s.outputInfo(0).numElements(), out0.length);
            boolean finite = true;
            for (float v : out0) {
                finite &= Float.isFinite(v);
            }
            assertTrue(finite);

            ByteBuffer in =
                    ByteBuffer.allocateDirect(input.length * 4).order(ByteOrder.nativeOrder());
            in.asFloatBuffer().put(input);
            s.setInput(0, in);
            s.run();
            ByteBuffer out =
                    ByteBuffer.allocateDirect(out0.length * 4).order(ByteOrder.nativeOrder());
            s.getOutput(0, out);
            float[] out1 = new float[out0.length];
            out.asFloatBuffer().get(out1);
            assertArrayEquals(out0, out1);
        }
    }

    @Test
    void precisionLeavesAFloatModelAlone() {
        float[] input = new float[128 * 128 * 3];
        for (int i = 0; i < input.length; i++) {
            input[i] = (float) Math.cos(i * 0.003);
        }
        float[] want = null;
        try (Model m = Model.load(faceModel().getPath())) {
            for (Precision p : Precision.values()) {
                try (Session s = new Session(m, Session.Options.builder().precision(p).build())) {
                    s.reshape();
                    s.setInput(0, input);
                    s.run();
                    float[] out = s.getOutputFloats(0);
                    if (want == null) {
                        want = out;
                    } else {
                        assertArrayEquals(want, out, p.toString());
                    }
                }
            }
        }
    }

    private static float[] runOnce(Session s, float[] input) {
        s.reshape();
        s.setInput(0, input);
        s.run();
        return s.getOutputFloats(0);
    }

    @Test
    void backendDefaultsToTheCpu() {
        try (Model m = Model.load(faceModel().getPath());
                Session s = new Session(m);
                Session c = new Session(m,
                        Session.Options.builder().backend(Backend.CPU).build())) {
            assertEquals(Backend.CPU, s.backend());
            assertEquals(Backend.CPU, c.backend());
        }
        // the Java constants carry the C values (ks_backend, kestrel/engine.h)
        assertEquals(0, Backend.CPU.code());
        assertEquals(1, Backend.VULKAN.code());
        assertEquals(2, Backend.OPENCL.code());
        assertEquals(3, Backend.AUTO.code());
    }

    @Test
    void openclIsRefusedByName() {
        try (Model m = Model.load(faceModel().getPath())) {
            Session.Options opts = Session.Options.builder().backend(Backend.OPENCL).build();
            KestrelException e = assertThrows(KestrelException.class, () -> new Session(m, opts));
            assertEquals(Status.UNSUPPORTED, e.status());
            assertTrue(e.nativeMessage().contains("opencl"), e.getMessage());
            // the refusal gave the model's reference back: the model still works and closes
            try (Session s = new Session(m)) {
                assertEquals(Backend.CPU, s.backend());
            }
        }
    }

    @Test
    void autoRunsWhereItMeasuredAndMatchesTheCpu() {
        float[] input = new float[128 * 128 * 3];
        for (int i = 0; i < input.length; i++) {
            input[i] = (float) Math.sin(i * 0.007);
        }
        try (Model m = Model.load(faceModel().getPath());
                Session cpu = new Session(m);
                Session auto = new Session(m,
                        Session.Options.builder().backend(Backend.AUTO).build())) {
            float[] want = runOnce(cpu, input);
            float[] got = runOnce(auto, input);
            Backend b = auto.backend();
            assertTrue(b == Backend.CPU || b == Backend.VULKAN, b.toString());
            if (b == Backend.CPU) {
                assertArrayEquals(want, got);
            } else {
                for (int i = 0; i < want.length; i++) {
                    assertEquals(want[i], got[i], 1e-3f * Math.max(1f, Math.abs(want[i])),
                            "element " + i + " on " + b);
                }
            }
        }
    }

    @Test
    void wrongInputSizeThrowsWithTheTensorName() {
        try (Model m = Model.load(faceModel().getPath()); Session s = new Session(m)) {
            s.reshape();
            KestrelException e =
                    assertThrows(KestrelException.class, () -> s.setInput(0, new float[10]));
            assertEquals(Status.INVALID_ARGUMENT, e.status());
            assertTrue(e.nativeMessage().contains("196608"), e.getMessage());
            assertThrows(KestrelException.class, () -> s.setInput(0, new byte[7]));
            assertThrows(KestrelException.class, () -> s.getOutput(0, new float[3]));
        }
    }

    @Test
    void sessionOutlivesAClosedModel() {
        Model m = Model.load(faceModel().getPath());
        Session s = new Session(m);
        m.close();
        assertThrows(IllegalStateException.class, m::numInputs);
        assertThrows(IllegalStateException.class, () -> new Session(m));
        s.reshape(); // the native model stays alive until the session closes
        s.setInput(0, new float[128 * 128 * 3]);
        s.run();
        s.close();
        assertThrows(IllegalStateException.class, s::run);
    }

    @Test
    void badModelFileThrows() throws Exception {
        File junk = File.createTempFile("kestrel", ".ksm");
        try {
            Files.write(junk.toPath(), new byte[] {1, 2, 3, 4, 5, 6, 7, 8});
            KestrelException e =
                    assertThrows(KestrelException.class, () -> Model.load(junk.getPath()));
            assertTrue(e.status() == Status.INVALID_MODEL || e.status() == Status.IO_ERROR,
                    e.getMessage());
            assertTrue(!e.nativeMessage().isEmpty());
        } finally {
            junk.delete();
        }
        KestrelException e = assertThrows(KestrelException.class,
                () -> Model.load("/nonexistent/model.ksm"));
        assertEquals(Status.IO_ERROR, e.status());
        assertTrue(e.nativeMessage().contains("/nonexistent/model.ksm"), e.getMessage());
    }
}
