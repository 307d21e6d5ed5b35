"""The words of the disk report (issue 43, part 2), in English and Japanese: what the owner is told fills their
notebook's disks, each culprit with its size and the command that frees it, the JupyterLab trash first. The
commands themselves are not words to translate: they live beside their sources in shared/core/disk_report.py.
And the disk warning's (part 1): the owner's DM when the disk alert opens, and the organizers' channel line."""

from __future__ import annotations

from typing import Final

from shared.core.messages.formatting import Lang

DISK: Final[dict[str, dict[Lang, str]]] = {
    "disk.header": {
        "en": "What fills the disks of your notebook *{instance}*:",
        "ja": "ノートブック *{instance}* のディスクを占めているもの:",
    },
    "disk.usage.boot": {
        "en": "• Boot disk (`/`): {used} of {size} used ({percent} %).",
        "ja": "• ブートディスク (`/`): {size} 中 {used} 使用 ({percent} %)。",
    },
    "disk.usage.home": {
        "en": "• Home disk (`{mount}`): {used} of {size} used ({percent} %).",
        "ja": "• ホームディスク (`{mount}`): {size} 中 {used} 使用 ({percent} %)。",
    },
    "disk.culprit.trash": {
        "en": "• JupyterLab's trash: {size}. Deleting a file in JupyterLab moves it here, so it freed nothing yet. "
        "Empty it first: `{command}`",
        "ja": "• JupyterLab のゴミ箱: {size}。JupyterLab で削除したファイルはここに移動するだけで、まだ容量は空いていません。"
        "まず空にしてください: `{command}`",
    },
    "disk.culprit.pip": {
        "en": "• pip's download cache: {size}. Free it: `{command}`",
        "ja": "• pip のダウンロードキャッシュ: {size}。削除: `{command}`",
    },
    "disk.culprit.conda": {
        "en": "• conda's package cache: {size}. Free it: `{command}`",
        "ja": "• conda のパッケージキャッシュ: {size}。削除: `{command}`",
    },
    "disk.culprit.huggingface": {
        "en": "• Hugging Face's model and dataset cache: {size}. Choose what to delete: `{command}`, or delete all "
        "of it (models are downloaded again when used): `rm -rf ~/.cache/huggingface/hub`",
        "ja": "• Hugging Face のモデル・データセットのキャッシュ: {size}。削除するものを選ぶ: `{command}`、またはすべて"
        "削除 (モデルは次に使うときに再ダウンロードされます): `rm -rf ~/.cache/huggingface/hub`",
    },
    "disk.culprit.checkpoints": {
        "en": "• Notebook checkpoints (`.ipynb_checkpoints` folders): {size}. Free them: `{command}`",
        "ja": "• ノートブックのチェックポイント (`.ipynb_checkpoints` フォルダ): {size}。削除: `{command}`",
    },
    "disk.culprit.docker": {
        "en": "• Docker images and containers: {size}. See what they hold with `docker system df`, then: `{command}`",
        "ja": "• Docker のイメージとコンテナ: {size}。`docker system df` で中身を確認してから: `{command}`",
    },
    "disk.models": {
        "en": "• Large model files: {files}. Delete the checkpoints you no longer need (`rm FILE`).",
        "ja": "• 大きなモデルファイル: {files}。不要になったチェックポイントを削除してください (`rm ファイル名`)。",
    },
    "disk.folders": {
        "en": "Largest folders: {folders}.",
        "ja": "大きいフォルダ: {folders}。",
    },
    "disk.partial": {
        "en": "(The count stopped early on a very large disk: the real sizes are at least these.)",
        "ja": "(ディスクが非常に大きいため集計を途中で打ち切りました。実際のサイズはこれ以上です。)",
    },
    "disk.nothing_known": {
        "en": "• None of the usual caches holds much: the space is in your own files (largest folders below).",
        "ja": "• よくあるキャッシュはほとんど容量を使っていません。容量はご自身のファイルが占めています (下の大きいフォルダ参照)。",
    },
    "warn.disk.dm": {
        "en": ":floppy_disk: A disk of your notebook *{instance}* (`{device}`) is {percent} full. When it is full, "
        "JupyterLab cannot save your notebooks (\"No space left on device\") and installs break half-way. Free "
        "space now; deleting in JupyterLab's file browser only moves files to its trash. Not enough? Ask the "
        "organizers for a bigger disk: `/restart-notebook bigger-disk`.",
        "ja": ":floppy_disk: ノートブック *{instance}* のディスク (`{device}`) の使用率が {percent} です。満杯になると "
        "JupyterLab はノートブックを保存できず (\"No space left on device\")、インストールも途中で失敗します。"
        "今のうちに容量を空けてください。JupyterLab のファイルブラウザでの削除はゴミ箱に移すだけです。足りない場合は"
        "運営にディスクの拡張を依頼できます: `/restart-notebook bigger-disk`。",
    },
    "warn.disk.no_report": {
        "en": "(What fills it is not known: {reason}. In JupyterLab's terminal, `du -xh -d1 ~ | sort -h | tail` "
        "lists the largest folders.)",
        "ja": "(何が容量を占めているかは不明です: {reason}。JupyterLab のターミナルで `du -xh -d1 ~ | sort -h | tail` "
        "を実行すると大きいフォルダが分かります。)",
    },
    "warn.disk.report_missing": {
        "en": "the notebook's guard has not reported it",
        "ja": "ノートブックのガードからの報告がありません",
    },
    "warn.disk.report_unreadable": {
        "en": "its report could not be read ({error})",
        "ja": "報告を読めませんでした ({error})",
    },
    "warn.disk.channel": {
        "en": ":floppy_disk: {instance}'s disk `{device}` is {percent} full; I warned {owner}.",
        "ja": ":floppy_disk: {instance} のディスク `{device}` の使用率が {percent} です。{owner} さんに警告しました。",
    },
    "warn.disk.channel.unreached": {
        "en": ":floppy_disk: {instance}'s disk `{device}` is {percent} full; I could not reach its owner {owner} by DM.",
        "ja": ":floppy_disk: {instance} のディスク `{device}` の使用率が {percent} です。所有者 {owner} さんに DM "
        "できませんでした。",
    },
    "warn.disk.channel.no_owner": {
        "en": ":floppy_disk: {instance}'s disk `{device}` is {percent} full; it has no owner to warn (no proxy-user-mail).",
        "ja": ":floppy_disk: {instance} のディスク `{device}` の使用率が {percent} です。警告する所有者がいません "
        "(proxy-user-mail なし)。",
    },
    "warn.disk.channel.no_dm": {
        "en": ":floppy_disk: {instance}'s disk `{device}` is {percent} full; its owner {owner} was not messaged "
        "(OWNER_DM=false).",
        "ja": ":floppy_disk: {instance} のディスク `{device}` の使用率が {percent} です。所有者 {owner} さんには "
        "メッセージを送っていません (OWNER_DM=false)。",
    },
}
