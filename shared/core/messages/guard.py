"""The words of the OOM guard's outcomes (issues 22 and 32), in English and Japanese: what the owner hears of a kernel
lost while JupyterLab lived, of JupyterLab brought back by the guard, of a cell interrupted before the kill; and the
organizers' lines for the same (the reset's reason when the guard did not bring JupyterLab back, the day's count
beside the bigger-machine offer, the `status` column)."""

from __future__ import annotations

from typing import Final

from shared.core.messages.formatting import Lang

GUARD: Final[dict[str, dict[Lang, str]]] = {
    # ---- the owner ----------------------------------------------------------------------------
    "dm.kernel_killed": {
        "en": "Your notebook *{instance}* ran out of memory at {time}: the system killed {process}{memory}. "
        "JupyterLab and your other kernels stayed up, so nothing was restarted: Jupyter restarts that kernel by "
        "itself (\"Kernel Restarting\"). What it held in memory is lost: re-run the cells you need.\n{advice}",
        "ja": "ノートブック *{instance}* が {time} にメモリ不足になり、{process}{memory} が強制終了されました。"
        "JupyterLab と他のカーネルは動作し続けているため、何も再起動していません。このカーネルは Jupyter が"
        "自動で再起動します (「Kernel Restarting」)。メモリ上のデータは失われたので、必要なセルを再実行してください。"
        "\n{advice}",
    },
    "dm.killed_outside_jupyter": {
        "en": "Your notebook *{instance}* ran out of memory at {time}: the system killed {process}{memory}, a "
        "process outside JupyterLab (`{unit}`). JupyterLab and your kernels stayed up, so nothing was "
        "restarted.\n{advice}",
        "ja": "ノートブック *{instance}* が {time} にメモリ不足になり、JupyterLab の外のプロセス {process}{memory} "
        "(`{unit}`) が強制終了されました。JupyterLab とカーネルは動作し続けているため、何も再起動していません。"
        "\n{advice}",
    },
    "dm.guard_restarted": {
        "en": "Your notebook *{instance}* ran out of memory at {time}: the system killed {process}{memory} and "
        "JupyterLab went down with it, then came back by itself, so the instance was not restarted. Reload the "
        "JupyterLab tab; your kernels were restarted, and what they held in memory is lost.\n{advice}",
        "ja": "ノートブック *{instance}* が {time} にメモリ不足になり、{process}{memory} が強制終了されて JupyterLab "
        "も停止しましたが、自動で復旧したためインスタンスは再起動していません。JupyterLab のタブを再読み込み"
        "してください。カーネルは再起動され、メモリ上のデータは失われています。\n{advice}",
    },
    "dm.interrupted": {
        "en": "A cell of your notebook *{instance}* was interrupted at {time} before it ran out of memory: "
        "{process} held {rss} of the {limit} JupyterLab may use. The kernel and its variables are kept. Free "
        "memory (`del` large objects, load less data) before running it again.\n{advice}",
        "ja": "ノートブック *{instance}* のセルが {time} にメモリ不足になる前に中断されました: {process} が "
        "JupyterLab の上限 {limit} のうち {rss} を使用していました。カーネルと変数はそのまま残っています。"
        "再実行する前にメモリを空けてください (大きなオブジェクトを `del`、読み込むデータを減らす)。\n{advice}",
    },
    "dm.gpu_freed": {
        "en": ":broom: On your notebook *{instance}*, {process} kept {held} of GPU memory after its kernel was gone; "
        "notebook-medic ended it at {time}, and the GPU's memory is yours again. Nothing else was touched.",
        "ja": ":broom: ノートブック *{instance}* で、カーネルが終了した後も {process} が GPU メモリ {held} を"
        "保持していたため、notebook-medic が {time} に終了させました。GPU メモリは再び使えます。"
        "ほかには何も変更していません。",
    },
    "dm.gpu_freed.unknown": {"en": "an unknown amount", "ja": "不明な量"},
    "dm.refused": {
        "en": "A cell of your notebook *{instance}* was stopped at {time} before it ran out of memory: {process} "
        "asked for {asked} when JupyterLab had {left} left, so the allocation was refused (`MemoryError`). The "
        "kernel and its variables are kept. Work on less at once (fewer rows, smaller arrays, one fold at a time) "
        "before running it again.\n{advice}",
        "ja": "ノートブック *{instance}* のセルが {time} にメモリ不足になる前に停止されました: {process} が "
        "{asked} を要求しましたが、JupyterLab の残りは {left} だったため、割り当てを拒否しました (`MemoryError`)。"
        "カーネルと変数はそのまま残っています。再実行する前に一度に扱う量を減らしてください (行数、配列の大きさ、"
        "fold を一つずつ)。\n{advice}",
    },
    "dm.refused.asked_unknown": {"en": "more memory", "ja": "それ以上のメモリ"},
    "dm.memory_used": {"en": " ({rss} in use)", "ja": " (使用量 {rss})"},
    # ---- the organizers -----------------------------------------------------------------------
    "reason.guard-no-restart": {
        "en": "JupyterLab is down and its guard did not bring it back within {wait} of the kill",
        "ja": "JupyterLab が停止しており、ガードが Kill 後 {wait} 以内に復旧させませんでした",
    },
    "outcome.kernel_kept": {
        "en": ":information_source: Not restarted: the cell was stopped before the kill (interrupted, or its "
        "allocation refused), the kernel kept",
        "ja": ":information_source: 再起動せず: Kill の前にセルを停止し (中断、またはメモリ割り当ての拒否)、カーネルは"
        "保たれました",
    },
    "outcome.kernels_today": {
        "en": "This notebook's kernels today: {kills} killed; cells stopped, kernels kept: {interrupts}",
        "ja": "このノートブックのカーネル (本日): 強制終了 {kills} 回、セル停止 (カーネル保持) {interrupts} 回",
    },
    "alert.title.kernel_kept": {
        "en": ":octagonal_sign: {instance}: a cell stopped before it ran out of memory, its kernel kept",
        "ja": ":octagonal_sign: {instance}: メモリ不足の前にセルを停止し、カーネルは保たれました",
    },
    "field.stopped_process": {"en": "Stopped in", "ja": "停止したプロセス"},
    "field.stopped_at": {"en": "Stopped at", "ja": "停止時刻"},
}
