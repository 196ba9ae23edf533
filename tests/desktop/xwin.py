"""X11 window helper for the desktop e2e tests, with nothing but ctypes and libX11.

  xwin.py close WINDOW_ID...   send WM_DELETE_WINDOW, as a window manager does when the user
                               clicks the close button (Xvfb has no window manager to do it)
  xwin.py shot WINDOW_ID FILE  save a PNG of a window as it is on screen (a native window that
                               WebDriver cannot see: the approval prompt)
"""

import ctypes
import struct
import sys
import zlib

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


class XWindowAttributes(ctypes.Structure):
    _fields_ = [("x", ctypes.c_int), ("y", ctypes.c_int), ("width", ctypes.c_int),
                ("height", ctypes.c_int), ("pad", ctypes.c_long * 32)]


class XImage(ctypes.Structure):
    _fields_ = [("width", ctypes.c_int), ("height", ctypes.c_int), ("xoffset", ctypes.c_int),
                ("format", ctypes.c_int), ("data", ctypes.POINTER(ctypes.c_ubyte)),
                ("byte_order", ctypes.c_int), ("bitmap_unit", ctypes.c_int),
                ("bitmap_bit_order", ctypes.c_int), ("bitmap_pad", ctypes.c_int),
                ("depth", ctypes.c_int), ("bytes_per_line", ctypes.c_int),
                ("bits_per_pixel", ctypes.c_int)]


def shot(window, path):
    X.XGetWindowAttributes.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_void_p]
    X.XGetImage.restype = ctypes.c_void_p
    X.XGetImage.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_int,
                            ctypes.c_uint, ctypes.c_uint, ctypes.c_ulong, ctypes.c_int]
    d = X.XOpenDisplay(None)
    if not d:
        sys.exit("cannot open the X display (is DISPLAY set?)")
    attrs = XWindowAttributes()
    X.XGetWindowAttributes(d, window, ctypes.byref(attrs))
    w, h = attrs.width, attrs.height
    img = X.XGetImage(d, window, 0, 0, w, h, 0xFFFFFFFF, 2)  # ZPixmap
    if not img:
        sys.exit("cannot read the window's pixels")
    im = ctypes.cast(img, ctypes.POINTER(XImage)).contents
    if im.bits_per_pixel != 32:
        sys.exit(f"unexpected depth: {im.bits_per_pixel} bits per pixel")
    raw = ctypes.string_at(im.data, im.bytes_per_line * h)
    rows = []
    for y in range(h):
        line = raw[y * im.bytes_per_line:y * im.bytes_per_line + w * 4]
        # BGRX → RGB, each row led by PNG's "no filter" byte.
        rgb = bytearray(w * 3)
        rgb[0::3], rgb[1::3], rgb[2::3] = line[2::4], line[1::4], line[0::4]
        rows.append(b"\0" + bytes(rgb))
    X.XCloseDisplay(d)

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    png = (b"\x89PNG\r\n\x1a\n"
           + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(b"".join(rows)))
           + chunk(b"IEND", b""))
    with open(path, "wb") as f:
        f.write(png)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "shot":
        shot(int(sys.argv[2], 0), sys.argv[3])
    elif len(sys.argv) >= 3 and sys.argv[1] == "close":
        close([int(w, 0) for w in sys.argv[2:]])
    else:
        sys.exit(__doc__)
