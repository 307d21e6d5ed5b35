"""The words of a bigger disk (issue 43, part 3), in English and Japanese: the ask, the organizers' request with its
proposed size and price, the grown disk and a resize that failed, each told to the owner and on the request."""

from __future__ import annotations

from typing import Final

from shared.core.messages.formatting import Lang

DISK_ASK: Final[dict[str, dict[Lang, str]]] = {
    "disk_ask.disk.data": {"en": "data (home)", "ja": "データ (ホーム)"},
    "disk_ask.disk.boot": {"en": "boot", "ja": "ブート"},
    "disk_ask.queued": {
        "en": ":incoming_envelope: Asking the organizers for a bigger {disk} disk for *{instance}*; you'll hear "
        "from me.",
        "ja": ":incoming_envelope: *{instance}* の{disk}ディスクの拡張を運営に依頼しています。結果はお知らせします。",
    },
    "disk_ask.request": {
        "en": ":floppy_disk: {requester} asks for a bigger {disk} disk for *{instance}*: {current} GB → {new} GB "
        "(+{added} GB). Monthly price difference: {price}.",
        "ja": ":floppy_disk: {requester} さんが *{instance}* の{disk}ディスクの拡張を依頼しています: {current} GB → "
        "{new} GB (+{added} GB)。月額の差: {price}。",
    },
    "disk_ask.price": {
        "en": "+${delta} a month ({type} at ${per_gb} per GB a month, DISK_PRICES)",
        "ja": "月 +${delta} ({type}、GB あたり月 ${per_gb}、DISK_PRICES)",
    },
    "disk_ask.price_unset": {
        "en": "not configured (DISK_PRICES has no price for {type}; a disk is billed per provisioned GB a month, "
        "by type and region: {source})",
        "ja": "未設定 (DISK_PRICES に {type} の価格がありません。ディスクは確保した GB あたり月額で、種類とリージョン"
        "ごとに課金: {source})",
    },
    "disk_ask.asked": {
        "en": ":incoming_envelope: I asked the organizers to grow the {disk} disk of *{instance}* from {current} GB "
        "to {new} GB. You'll hear from me when they decide; growing a disk does not stop the notebook.",
        "ja": ":incoming_envelope: *{instance}* の{disk}ディスクを {current} GB から {new} GB に拡張するよう運営に"
        "依頼しました。決まり次第お知らせします。ディスクの拡張でノートブックは停止しません。",
    },
    "disk_ask.still_open": {
        "en": ":hourglass_flowing_sand: Your ask for a bigger disk for *{instance}*, sent {since}, is still with the "
        "organizers: I haven't asked again.",
        "ja": ":hourglass_flowing_sand: {since} に送った *{instance}* のディスク拡張の依頼はまだ運営が確認中です。"
        "再度の依頼はしていません。",
    },
    "disk_ask.daily_limit": {
        "en": ":no_entry_sign: *{instance}* has had {count} asks for a bigger disk in the last 24 hours, the most "
        "there can be. Ask the organizers directly if it can't wait.",
        "ja": ":no_entry_sign: *{instance}* のディスク拡張の依頼は過去 24 時間で {count} 件あり、上限です。急ぎの場合は"
        "運営に直接ご相談ください。",
    },
    "disk_ask.at_most": {
        "en": ":no_entry_sign: The {disk} disk of *{instance}* is {current} GB; {max} GB is the most I may ask for "
        "(MAX_DISK_GB). Free space instead, or ask the organizers directly.",
        "ja": ":no_entry_sign: *{instance}* の{disk}ディスクは {current} GB です。依頼できる上限は {max} GB "
        "(MAX_DISK_GB) です。容量を空けるか、運営に直接ご相談ください。",
    },
    "disk_ask.no_disk": {
        "en": ":no_entry_sign: *{instance}* has no {disk} disk I can read the size of: nothing was asked.",
        "ja": ":no_entry_sign: *{instance}* には大きさを読める{disk}ディスクがありません。依頼はしていません。",
    },
    "disk_ask.not_asked": {
        "en": ":warning: I couldn't ask for a bigger disk for *{instance}*: {error}. Nothing was asked; try again "
        "in a minute.",
        "ja": ":warning: *{instance}* のディスク拡張を依頼できませんでした: {error}。依頼はしていません。1 分ほどして"
        "からもう一度お試しください。",
    },
    "disk_ask.done": {
        "en": ":white_check_mark: Approved by {who}: the {disk} disk of *{instance}* is now {new} GB (was "
        "{current} GB). I'll confirm the filesystem grew from the guard's disk report, within {minutes} minutes.",
        "ja": ":white_check_mark: {who} さんが承認: *{instance}* の{disk}ディスクは {new} GB になりました (元は "
        "{current} GB)。ファイルシステムが拡張されたかをガードのディスク報告で {minutes} 分以内に確認します。",
    },
    "disk_ask.dm_done": {
        "en": ":floppy_disk: The organizers grew the {disk} disk of your notebook *{instance}* to {new} GB. I'll "
        "tell you when its filesystem shows the room (within {minutes} minutes).",
        "ja": ":floppy_disk: 運営がノートブック *{instance}* の{disk}ディスクを {new} GB に拡張しました。ファイル"
        "システムに反映されたら ({minutes} 分以内に) お知らせします。",
    },
    "disk_ask.fs_grown": {
        "en": ":white_check_mark: The filesystem of the {disk} disk of *{instance}* grew: {size} GB, {free} GB free "
        "(the guard's disk report).",
        "ja": ":white_check_mark: *{instance}* の{disk}ディスクのファイルシステムが拡張されました: {size} GB、空き "
        "{free} GB (ガードのディスク報告)。",
    },
    "disk_ask.fs_not_grown": {
        "en": ":warning: The {disk} disk of *{instance}* is {new} GB, but its filesystem has not grown within "
        "{minutes} minutes ({seen}). {how}",
        "ja": ":warning: *{instance}* の{disk}ディスクは {new} GB ですが、{minutes} 分以内にファイルシステムが拡張"
        "されませんでした ({seen})。{how}",
    },
    "disk_ask.by_hand.data": {
        "en": "To grow it by hand, in a terminal: `{ext4}` (an xfs filesystem: `{xfs}`; `{fstype}` says which).",
        "ja": "手動で拡張するには、ターミナルで: `{ext4}` (xfs の場合: `{xfs}`。種類は `{fstype}` で分かります)。",
    },
    "disk_ask.by_hand.boot": {
        "en": "Stop and start the notebook: its image grows the root partition and filesystem at boot.",
        "ja": "ノートブックを停止して再起動してください。起動時にルートのパーティションとファイルシステムが拡張されます。",
    },
    "disk_ask.fs_seen": {"en": "the guard's disk report says {size} GB", "ja": "ガードのディスク報告では {size} GB"},
    "disk_ask.failed": {
        "en": ":x: The {disk} disk of *{instance}* was not grown to {new} GB: {error}. Nothing changed: it is "
        "still {current} GB.",
        "ja": ":x: *{instance}* の{disk}ディスクを {new} GB に拡張できませんでした: {error}。変更はなく、"
        "{current} GB のままです。",
    },
    "disk_ask.already": {
        "en": "The {disk} disk of *{instance}* is already {current} GB (asked: {new} GB): nothing to do.",
        "ja": "*{instance}* の{disk}ディスクはすでに {current} GB です (依頼: {new} GB)。何もしません。",
    },
    "disk_ask.denied_dm": {
        "en": "The organizers declined a bigger disk for *{instance}* for now. Ask them in the channel if you need "
        "it.",
        "ja": "運営は *{instance}* のディスク拡張を今回は見送りました。必要な場合はチャンネルでご相談ください。",
    },
    "button.disk_ask": {"en": "Grow the disk", "ja": "ディスクを拡張"},
    "button.ack.disk_grow": {"en": "Growing the disk of `{name}`…", "ja": "`{name}` のディスクを拡張しています…"},
}
