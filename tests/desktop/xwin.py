"""X11 window helper for the desktop e2e tests, with nothing but ctypes and libX11.

  xwin.py close WINDOW_ID...   send WM_DELETE_WINDOW, as a window manager does when the user
                               clicks the close button (Xvfb has no window manager to do it)
"""

import ctypes
import sys

X = ctypes.cdll.LoadLibrary("libX11.so.6")
X.XOpenDisplay.restype = ctypes.c_void_p
X.XOpenDisplay.argtypes = [ctypes.c_char_p]
X.XInternAtom.restype = ctypes.c_ulong
X.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
X.XSendEvent.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_long, ctypes.c_void_p]
X.XFlush.argtypes = [ctypes.c_void_p]
X.XCloseDisplay.argtypes = [ctypes.c_void_p]

CLIENT_MESSAGE = 33


class XClientMessageEvent(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("serial", ctypes.c_ulong),
        ("send_event", ctypes.c_int),
        ("display", ctypes.c_void_p),
        ("window", ctypes.c_ulong),
        ("message_type", ctypes.c_ulong),
        ("format", ctypes.c_int),
        ("l", ctypes.c_long * 5),
    ]


class XEvent(ctypes.Union):
    _fields_ = [("xclient", XClientMessageEvent), ("pad", ctypes.c_long * 24)]


def close(windows):
    d = X.XOpenDisplay(None)
    if not d:
        sys.exit("cannot open the X display (is DISPLAY set?)")
    protocols = X.XInternAtom(d, b"WM_PROTOCOLS", 0)
    delete = X.XInternAtom(d, b"WM_DELETE_WINDOW", 0)
    for w in windows:
        ev = XEvent()
        ev.xclient.type = CLIENT_MESSAGE
        ev.xclient.window = w
        ev.xclient.message_type = protocols
        ev.xclient.format = 32
        ev.xclient.l[0] = delete
        ev.xclient.l[1] = 0
        X.XSendEvent(d, w, 0, 0, ctypes.byref(ev))
    X.XFlush(d)
    X.XCloseDisplay(d)


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] != "close":
        sys.exit(__doc__)
    close([int(w, 0) for w in sys.argv[2:]])
