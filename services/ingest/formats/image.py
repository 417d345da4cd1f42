"""Pictures (PNG, JPEG, WebP): the text in them, read by OCR. Their size is read from the header before anything
is decoded, so a file claiming 100,000 x 100,000 pixels is refused without allocating them."""

from __future__ import annotations

import io
import warnings

from PIL import Image, UnidentifiedImageError

from secondbrain.ingest.formats.base import Extracted, Limits, Part, Unreadable
from secondbrain.ingest.formats.ocr import INSTALL, SPARSE, OcrFailed, ocr_available, read_picture


def extract_image(data: bytes, limits: Limits) -> Extracted:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            width, height = image.size
    except (UnidentifiedImageError, Image.DecompressionBombError, Image.DecompressionBombWarning, OSError) as error:
        if isinstance(error, Image.DecompressionBombError | Image.DecompressionBombWarning):
            raise Unreadable(f"the picture claims more pixels than it is sensible to read ({error})") from None
        raise Unreadable(
            "not a picture that can be read: its bytes are not the PNG, JPEG or WebP its name says"
        ) from None
    if width * height > limits.max_pixels:
        raise Unreadable(
            f"the picture is {width:,} x {height:,} pixels, over the {limits.max_pixels:,}-pixel limit "
            "(ingest.max_picture_pixels)"
        )
    extracted = Extracted()
    if not (limits.ocr and ocr_available()):
        extracted.unread.append(f"its text was not read: {'OCR is off (ingest.ocr)' if not limits.ocr else INSTALL}")
        return extracted
    try:
        image.load()
        text = read_picture(image.convert("L"), SPARSE, limits.ocr_seconds)
    except (OSError, ValueError) as error:
        raise Unreadable(f"the picture is damaged and cannot be decoded ({error})") from None
    except OcrFailed as error:
        extracted.unread.append(f"its text was not read: {error}")
        return extracted
    if text:
        extracted.parts.append(Part("Text in the picture", text))
    else:
        extracted.unread.append("no text was found in the picture")
    return extracted
