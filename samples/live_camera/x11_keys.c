/* ks-sample-x11-keys: test helper (not sample code) that types keys into a window by title.
 *
 *   ks-sample-x11-keys TITLE DELAY_MS KEY...      e.g.  "Kestrel live camera" 1500 Right space
 *
 * Waits (up to 30 s) for a top-level window named TITLE on $DISPLAY, then sends each key (an X
 * keysym name) as a press + release, DELAY_MS apart (the first after DELAY_MS too). Exit status
 * 0 when every key was sent. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <X11/Xlib.h>
#include <X11/Xutil.h>

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static Window find_window(Display *d, Window w, const char *title) {
    char *name = NULL;
    if (XFetchName(d, w, &name) && name) {
        int match = !strcmp(name, title);
        XFree(name);
        if (match) return w;
    }
    Window root, parent, *children = NULL, found = 0;
    unsigned int n = 0;
    if (!XQueryTree(d, w, &root, &parent, &children, &n)) return 0;
    for (unsigned int i = 0; i < n && !found; i++)
        found = find_window(d, children[i], title);
    if (children) XFree(children);
    return found;
}

static void send_key(Display *d, Window w, KeyCode code, int type) {
    XKeyEvent ev = {.type = type,
                    .display = d,
                    .window = w,
                    .root = DefaultRootWindow(d),
                    .time = CurrentTime,
                    .same_screen = True,
                    .keycode = code};
    XSendEvent(d, w, True, type == KeyPress ? KeyPressMask : KeyReleaseMask, (XEvent *)&ev);
    XFlush(d);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: ks-sample-x11-keys TITLE DELAY_MS KEY...\n");
        return 2;
    }
    Display *d = XOpenDisplay(NULL);
    if (!d) {
        fprintf(stderr, "ks-sample-x11-keys: cannot open the X display\n");
        return 1;
    }
    Window w = 0;
    for (int i = 0; i < 300 && !w; i++) {
        w = find_window(d, DefaultRootWindow(d), argv[1]);
        if (!w) sleep_ms(100);
    }
    int rc = 1;
    if (!w) {
        fprintf(stderr, "ks-sample-x11-keys: no window named '%s'\n", argv[1]);
        goto done;
    }
    long delay_ms = atol(argv[2]);
    for (int i = 3; i < argc; i++) {
        KeySym sym = XStringToKeysym(argv[i]);
        KeyCode code = sym == NoSymbol ? 0 : XKeysymToKeycode(d, sym);
        if (!code) {
            fprintf(stderr, "ks-sample-x11-keys: unknown key '%s'\n", argv[i]);
            goto done;
        }
        sleep_ms(delay_ms);
        send_key(d, w, code, KeyPress);
        send_key(d, w, code, KeyRelease);
        printf("sent %s\n", argv[i]);
        fflush(stdout);
    }
    rc = 0;
done:
    XCloseDisplay(d);
    return rc;
}
