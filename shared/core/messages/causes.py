"""The words of an outage's cause (issue 42, part 3), in English and Japanese: why the notebook is down, and, where
a reset does not mend it, what its owner (or an organizer) does instead. `{evidence}` is what the guard saw
(systemd's last journal lines, a disk's use and its largest folders, the driver's words): written by the VM, so
escaped, cut and made printable before it gets here (shared/core/causes.py)."""

from __future__ import annotations

from typing import Final

from shared.core.messages.formatting import Lang

CAUSES: Final[dict[str, dict[Lang, str]]] = {
    "reason.oom-kill": {
        "en": "the Jupyter server was killed for want of memory (systemd: oom-kill). Its last words: {evidence}",
        "ja": "メモリ不足で Jupyter サーバーが強制終了されました (systemd: oom-kill)。最後のログ: {evidence}",
    },
    "reason.disk-full": {
        "en": "the disk is full ({evidence}), so JupyterLab cannot write its files",
        "ja": "ディスクがいっぱいです ({evidence})。JupyterLab がファイルを書き込めません",
    },
    "reason.agent-stopped": {
        "en": "a Workbench agent stopped in the VM ({evidence}: the proxy agent is the browser's way into "
        "JupyterLab, the health agent reports its health)",
        "ja": "VM 内の Workbench エージェントが停止しました ({evidence}: プロキシエージェントはブラウザから "
        "JupyterLab への経路、ヘルスエージェントは稼働状況を報告します)",
    },
    "reason.jupyter-stopped": {
        "en": "the Jupyter service stopped and systemd did not start it again. systemd's last words: {evidence}",
        "ja": "Jupyter サービスが停止し、systemd は再起動しませんでした。systemd の最後のログ: {evidence}",
    },
    "reason.server-failing": {
        "en": "the Jupyter server fails as it starts, often after a change to its environment (a `pip install` "
        "into the server's own environment). The last lines of its log: {evidence}",
        "ja": "Jupyter サーバーが起動時に失敗しています。多くは環境の変更 (サーバー自身の環境への `pip install` など) "
        "の後に起こります。ログの最後の行: {evidence}",
    },
    "reason.vm-unresponsive": {
        "en": "the notebook's VM stopped answering: its guard has said nothing for over {silence} ({evidence})",
        "ja": "ノートブックの VM が応答していません: {silence} 以上ガードから報告がありません ({evidence})",
    },
    "reason.gpu-unusable": {
        "en": "the GPU is not usable; the driver says: {evidence}",
        "ja": "GPU が使えません。ドライバーの応答: {evidence}",
    },
    # An outage told instead of reset (shared/core/remedies.py), in the organizers' channel.
    "outcome.told": {
        "en": ":loudspeaker: Not restarted: {cause}. A restart did not mend it the last time; the owner is told. "
        "If they cannot act, please look at the notebook",
        "ja": ":loudspeaker: 再起動せず: {cause}。前回の再起動では直りませんでした。所有者に伝えました。"
        "所有者が対応できない場合はノートブックを確認してください",
    },
    "outcome.told.disk-full": {
        "en": ":floppy_disk: Not restarted: {cause}. A restart does not empty a disk; the owner is told what "
        "fills it. If they cannot act, grow the disk or free it for them (docs/operations.md)",
        "ja": ":floppy_disk: 再起動せず: {cause}。再起動してもディスクは空きません。何が容量を占めているか所有者に"
        "伝えました。所有者が対応できない場合は、ディスクを拡張するか代わりに空けてください (docs/operations.md)",
    },
    # The owner's DM about the same.
    "dm.sweep_told": {
        "en": "Your notebook *{instance}* is down: {cause}. I restarted it once already and that did not mend it, "
        "so I am not restarting it again; the organizers know. Undo the last change to the environment if there "
        "was one, or ask an organizer.",
        "ja": "ノートブック *{instance}* が停止しています: {cause}。すでに一度再起動しましたが直らなかったため、"
        "再度の再起動はしません。運営には伝えました。直前に環境を変更した場合は元に戻すか、運営に相談してください。",
    },
    "dm.sweep_told.gpu-unusable": {
        "en": "Your notebook *{instance}*'s GPU is not usable: {cause}. I restarted it once already and the driver "
        "still does not answer, so I am not restarting it again; the organizers know. Until it is mended your code "
        "runs on the CPU (slowly): save your work, then stop and start the notebook (a start loads the driver "
        "again), or ask an organizer.",
        "ja": "ノートブック *{instance}* の GPU が使えません: {cause}。すでに一度再起動しましたがドライバーが応答しないため、"
        "再度の再起動はしません。運営には伝えました。直るまでコードは CPU で (遅く) 動きます。作業を保存してから"
        "ノートブックを停止・起動する (起動時にドライバーが再読み込みされます) か、運営に相談してください。",
    },
    "dm.sweep_told.disk-full": {
        "en": "Your notebook *{instance}* is down: {cause}. A restart would not free any space, so I did not "
        "restart it. Free some space (JupyterLab's trash first: `rm -rf ~/.local/share/Trash/*`; then caches "
        "and old checkpoints), or ask an organizer for a bigger disk; the organizers know.",
        "ja": "ノートブック *{instance}* が停止しています: {cause}。再起動しても容量は空かないため、再起動していません。"
        "容量を空けてください (まず JupyterLab のゴミ箱: `rm -rf ~/.local/share/Trash/*`、次にキャッシュや古い"
        "チェックポイント)。または運営にディスクの拡張を依頼してください。運営には伝えました。",
    },
}
