package ai.kestrel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** The build's command-line tools (ks-sign, ks-protect), as the C tests use them. */
final class TestTools {
    private TestTools() {}

    /** The tool named by system property {@code kestrel.tool.NAME}; skips the test without it. */
    static String tool(String name) {
        String path = System.getProperty("kestrel.tool." + name, "");
        assumeTrue(!path.isEmpty() && new File(path).canExecute(),
                "tool '" + name + "' not built or -Dkestrel.tool." + name + " not set ('" + path
                        + "')");
        return path;
    }

    /** Runs a command and asserts that it exits 0; returns its output. */
    static String run(String... command) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(Arrays.asList(command));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), String.join(" ", cmd) + ":\n" + out);
        return out;
    }

    /** A file of the build's task models (KESTREL_MODELS_DIR); skips the test when absent. */
    static File model(String relative) {
        String dir = System.getenv("KESTREL_MODELS_DIR");
        if (dir == null || dir.isEmpty()) {
            dir = Kestrel.modelsDir();
        }
        File f = new File(dir, relative);
        assumeTrue(f.isFile(), f + " not found (build the ks_bundles target)");
        return f;
    }
}
